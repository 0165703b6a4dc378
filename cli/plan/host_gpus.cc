// cli/plan/host_gpus.cc: see host_gpus.h.
#include "cli/plan/host_gpus.h"

#include <algorithm>

namespace hvd::cli {

bool agentSharesOutGpus(bool noGpu, const HostPlan& host) { return !noGpu && !host.local && host.devices.empty(); }

bool usesGpu(Role role) { return role == Role::kWorker || role == Role::kChief; }

Status assignHostGpus(const GpuRule& rule, HostPlan& host, const std::vector<RankPlan*>& ranks) {
  if (host.devices.empty()) return Status::ok();  // no GPUs here: nothing to pin
  std::vector<RankPlan*> users, others;
  for (RankPlan* rank : ranks) (usesGpu(rank->role) ? users : others).push_back(rank);
  size_t need = users.size() * static_cast<size_t>(rule.perRank);
  if (need > host.devices.size() && !rule.oversubscribe) {
    return invalidUsage("host " + host.host + " offers " + std::to_string(host.devices.size()) + " GPU(s) but its " +
                        std::to_string(users.size()) + " rank(s) need " + std::to_string(need) + " (" +
                        std::to_string(rule.perRank) + " each)")
        .withHint("lower --gpus-per-rank, share GPUs with --oversubscribe-gpus, or run without them with --no-gpu");
  }
  for (size_t i = 0; i < users.size(); ++i) {
    for (int k = 0; k < rule.perRank; ++k) {
      size_t slot = (i * static_cast<size_t>(rule.perRank) + static_cast<size_t>(k)) % host.devices.size();
      users[i]->gpus.push_back(host.devices[slot]);
      users[i]->gpuSlots.push_back(static_cast<int>(slot));
    }
  }
  // Horovod's and torchrun's programs choose their GPU by local rank
  // (torch.cuda.set_device(hvd.local_rank()), Keras's gpus[hvd.local_rank()], LOCAL_RANK),
  // as horovodrun and torchrun leave every GPU visible. So where each rank here has one GPU
  // of its own and every rank here has one, each sees this host's GPUs of the job in
  // local-rank order: its own is the one at its local rank. Shown its own alone, local
  // rank 1 had one device and cuda:1 was an invalid ordinal. Several GPUs a rank (model
  // parallel: devices 0..K-1) or shared ones stay the rank's own alone, and so do MIG
  // instances (CUDA shows a process one MIG device, the first it is given) and TF_CONFIG
  // workers (MultiWorkerMirroredStrategy mirrors over every GPU a worker sees).
  const bool mig = std::any_of(host.devices.begin(), host.devices.end(),
                               [](const std::string& d) { return d.rfind("MIG-", 0) == 0; });
  const bool byLocalRank = rule.perRank == 1 && others.empty() && need <= host.devices.size() && !mig && !rule.tfConfig;
  host.gpusByLocalRank = byLocalRank;
  for (size_t i = 0; i < users.size(); ++i) {
    if (!byLocalRank) {
      users[i]->visibleGpus = users[i]->gpus;
      continue;
    }
    for (const RankPlan* user : users) users[i]->visibleGpus.push_back(user->gpus.front());
    users[i]->localGpu = static_cast<int>(i);
  }
  for (RankPlan* rank : others) rank->hideGpus = true;
  return Status::ok();
}

}  // namespace hvd::cli
