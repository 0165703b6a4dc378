// cli/launch/elastic_gpus.h: the GPU of a rank an elastic job adds on this machine, where
// the plan gives each rank one: a device of the host that no running rank there holds, and
// what the rank sees, by the plan's rule (plan_builder.cc assignGpus): the host's GPUs of
// the job in local-rank order, so hvd.local_rank() in the world it joins finds its own, or
// its own alone. Only the supervisor's thread uses it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::cli {

class ElasticGpus {
 public:
  // devices: what the host offers; own: each of the plan's workers' GPU there (by worker
  // number); hostList: ranks there see the host's GPUs (else their own alone).
  ElasticGpus(std::vector<std::string> devices, std::map<int, std::string> own, bool hostList);

  struct Seen {
    std::string own;
    std::vector<std::string> visible;  // CUDA_VISIBLE_DEVICES
    int localGpu = 0;                  // HVD_LOCAL_GPU: where `own` is in `visible`
  };
  // Worker `added`, one of the host's workers in `localOrder` (the new world's local-rank
  // order, itself included): nullopt when every device is held by another there.
  std::optional<Seen> give(int added, const std::vector<int>& localOrder);

 private:
  std::vector<std::string> devices_;
  std::map<int, std::string> own_;
  bool hostList_;
};

}  // namespace hvd::cli
