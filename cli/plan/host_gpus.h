// cli/plan/host_gpus.h: one host's GPUs shared out among its ranks: --gpus-per-rank each to
// the ranks that use GPUs (workers and a chief), in local-rank order, and what each sees.
// The plan does it for every host whose devices it knows (this machine, Slurm nodes); a host
// agent does it on its own host over ssh, where only the host itself can tell (its driver).
#pragma once

#include <string>
#include <vector>

#include "cli/plan/plan.h"
#include "runtime/common/status.h"

namespace hvd::cli {

struct GpuRule {
  int perRank = 1;              // --gpus-per-rank
  bool oversubscribe = false;   // --oversubscribe-gpus: ranks share them round robin
  bool tfConfig = false;        // --tf-config: a worker sees its own alone (the strategy mirrors over all)
};

bool usesGpu(Role role);

// Over ssh, whether a host's agent shares out its GPUs itself: a host whose devices hvdrun
// does not know (another -H host), unless --no-gpu leaves CUDA_VISIBLE_DEVICES alone.
bool agentSharesOutGpus(bool noGpu, const HostPlan& host);

// Fills in `host.gpusByLocalRank` and each rank's gpus, gpuSlots, visibleGpus, localGpu and
// hideGpus from `host.devices`; `ranks` are the host's, in local-rank order. A host without
// devices is left alone. kInvalidUsage naming the host and the counts when its GPU-using
// ranks need more devices than it has and sharing was not asked for.
Status assignHostGpus(const GpuRule& rule, HostPlan& host, const std::vector<RankPlan*>& ranks);

}  // namespace hvd::cli
