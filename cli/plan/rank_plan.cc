// cli/plan/rank_plan.cc: block placement and the per-rank environment.
#include "cli/plan/rank_plan.h"

#include <algorithm>

#include "runtime/common/rank_contract.h"

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
  namespace c = rank_contract;
  auto var = [](std::string_view name, const std::string& value) { return c::assignment(name, value); };
  auto num = [&](std::string_view name, int value) { return var(name, std::to_string(value)); };
  return {
      num(c::kHorovodRank, r.rank),          num(c::kHorovodSize, r.size),
      num(c::kHorovodLocalRank, r.localRank), num(c::kHorovodLocalSize, r.localSize),
      num(c::kHorovodCrossRank, r.crossRank), num(c::kHorovodCrossSize, r.crossSize),
      var(c::kHorovodHostname, r.host),
      num(c::kRank, r.rank),                 num(c::kSize, r.size),
      num(c::kLocalRank, r.localRank),       num(c::kLocalSize, r.localSize),
      num(c::kCrossRank, r.crossRank),       num(c::kCrossSize, r.crossSize),
      var(c::kHostname, r.host),
      num(c::kTorchRank, r.rank),            num(c::kTorchWorldSize, r.size),
      num(c::kTorchLocalRank, r.localRank),  num(c::kTorchLocalWorldSize, r.localSize),
      num(c::kTorchGroupRank, r.crossRank),  num(c::kTorchGroupWorldSize, r.crossSize),
      // torchrun's one role ("default") spans the job; the restarts are the plan's (planEnvironment).
      num(c::kTorchRoleRank, r.rank),        num(c::kTorchRoleWorldSize, r.size),
      var(c::kTorchRoleName, "default"),
      var(c::kTorchRestartCount, "0"),       var(c::kTorchMaxRestarts, "0"),
      var(c::kTorchRunId, "none"),
  };
}

}  // namespace hvd::cli
