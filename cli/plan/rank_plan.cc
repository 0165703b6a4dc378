// cli/plan/rank_plan.cc: block placement and the per-rank environment.
#include "cli/plan/rank_plan.h"

#include <algorithm>

namespace hvd::cli {

std::vector<RankAssignment> placeRanks(const std::vector<HostSlots>& hosts, int ranks) {
  std::vector<RankAssignment> plan;
  plan.reserve(static_cast<size_t>(std::max(ranks, 0)));
  struct Used {
    std::string host;
    int count;
  };
  std::vector<Used> used;
  for (const HostSlots& host : hosts) {
    int left = ranks - static_cast<int>(plan.size());
    if (left <= 0) break;
    int here = std::min(host.slots, left);
    if (here <= 0) continue;
    int cross = static_cast<int>(used.size());
    for (int local = 0; local < here; ++local) {
      RankAssignment r;
      r.rank = static_cast<int>(plan.size());
      r.localRank = local;
      r.localSize = here;
      r.crossRank = cross;
      r.host = host.host;
      plan.push_back(std::move(r));
    }
    used.push_back({host.host, here});
  }
  for (RankAssignment& r : plan) {
    r.size = static_cast<int>(plan.size());
    r.crossSize = static_cast<int>(used.size());
  }
  return plan;
}

std::vector<std::string> rankEnvironment(const RankAssignment& r) {
  auto var = [](const char* name, const std::string& value) { return std::string(name) + "=" + value; };
  auto num = [&](const char* name, int value) { return var(name, std::to_string(value)); };
  return {
      num("HOROVOD_RANK", r.rank),          num("HOROVOD_SIZE", r.size),
      num("HOROVOD_LOCAL_RANK", r.localRank), num("HOROVOD_LOCAL_SIZE", r.localSize),
      num("HOROVOD_CROSS_RANK", r.crossRank), num("HOROVOD_CROSS_SIZE", r.crossSize),
      var("HOROVOD_HOSTNAME", r.host),
      num("HVD_RANK", r.rank),              num("HVD_SIZE", r.size),
      num("HVD_LOCAL_RANK", r.localRank),   num("HVD_LOCAL_SIZE", r.localSize),
      num("HVD_CROSS_RANK", r.crossRank),   num("HVD_CROSS_SIZE", r.crossSize),
      var("HVD_HOSTNAME", r.host),
      num("RANK", r.rank),                  num("WORLD_SIZE", r.size),
      num("LOCAL_RANK", r.localRank),       num("LOCAL_WORLD_SIZE", r.localSize),
      num("GROUP_RANK", r.crossRank),       num("GROUP_WORLD_SIZE", r.crossSize),
      // torchrun's one role ("default") spans the job; the restarts are the plan's (planEnvironment).
      num("ROLE_RANK", r.rank),             num("ROLE_WORLD_SIZE", r.size),
      var("ROLE_NAME", "default"),
      var("TORCHELASTIC_RESTART_COUNT", "0"), var("TORCHELASTIC_MAX_RESTARTS", "0"),
      var("TORCHELASTIC_RUN_ID", "none"),
  };
}

}  // namespace hvd::cli
