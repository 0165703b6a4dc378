// cli/plan/rank_plan.h: who each rank is (host, local and cross ranks) and the
// environment contract it is started with. Ranks are contiguous per host in host order,
// matching srun's block distribution.
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

struct RankAssignment {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;
  int crossRank = 0;  // the index of this rank's host in the plan
  int crossSize = 1;  // the number of hosts
  std::string host;
};

struct HostSlots {
  std::string host;
  int slots = 0;
  bool slotsGiven = true;  // false: "host" alone in -H or a hostfile, 1 slot by default
};

// Fills hosts in order with up to `ranks` ranks. The caller has checked that the slots
// suffice and that ranks > 0; hosts that get no rank do not count in crossSize.
std::vector<RankAssignment> placeRanks(const std::vector<HostSlots>& hosts, int ranks);

// The variables a rank is started with: Horovod's (HOROVOD_RANK, ...), hvdrun's own
// (HVD_RANK, ...) and torch-style (RANK, LOCAL_RANK, WORLD_SIZE, ...), as "NAME=value".
std::vector<std::string> rankEnvironment(const RankAssignment& rank);

}  // namespace hvd::cli
