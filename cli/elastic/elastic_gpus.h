// cli/elastic/elastic_gpus.h: the GPUs of a rank an elastic job adds on this machine, where
// the plan gives each rank --gpus-per-rank of them: devices of the host that no running rank
// there holds, and what the rank sees, by the plan's rule (plan_builder.cc assignGpus): with
// one a rank, the host's GPUs of the job in local-rank order, so hvd.local_rank() in the
// world it joins finds its own, or its own alone. Only the supervisor's thread uses it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::cli {

class ElasticGpus {
 public:
  // devices: what the host offers; own: each of the plan's workers' GPUs there (by worker
  // number); hostList: ranks there see the host's GPUs (else their own alone; the plan's
  // rule with more than one a rank); perRank: how many each rank gets.
  ElasticGpus(std::vector<std::string> devices, std::map<int, std::vector<std::string>> own, bool hostList, int perRank);

  struct Seen {
    std::vector<std::string> own;
    std::vector<std::string> visible;  // CUDA_VISIBLE_DEVICES
    int localGpu = 0;                  // HVD_LOCAL_GPU: where `own` starts in `visible`
  };
  // Worker `added`, one of the host's workers in `localOrder` (the new world's local-rank
  // order, itself included): nullopt when fewer than perRank devices are free there.
  std::optional<Seen> give(int added, const std::vector<int>& localOrder);

 private:
  std::vector<std::string> devices_;
  std::map<int, std::vector<std::string>> own_;
  bool hostList_;
  int perRank_;
};

}  // namespace hvd::cli
