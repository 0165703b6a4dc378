// collectives/allreduce.cc: the choice of algorithm.
#include "collectives/allreduce.h"

#include <algorithm>

#include "collectives/fold_schedule.h"
#include "collectives/halving_doubling.h"
#include "collectives/halving_schedule.h"
#include "collectives/ring_collectives.h"

namespace hvd::collectives {

std::optional<AllreduceAlgorithm> parseAllreduceAlgorithm(std::string_view name) {
  if (name == "auto") return AllreduceAlgorithm::kAuto;
  if (name == "ring") return AllreduceAlgorithm::kRing;
  if (name == "halving-doubling") return AllreduceAlgorithm::kHalvingDoubling;
  return std::nullopt;
}

namespace {

// Steps one after another in recursive doubling: log2 of the power of two it runs on, plus
// the fold and the unfold when the rank count is not one.
int recursiveDoublingSteps(int size) {
  FoldSchedule f(0, size);
  int steps = f.activeSize() == size ? 0 : 2;
  for (int p = f.activeSize(); p > 1; p /= 2) ++steps;
  return steps;
}

}  // namespace

AllreduceVariant chooseAllreduce(int size, size_t bytes, AllreduceAlgorithm asked) {
  bool small = bytes <= kSmallAllreduceBytes;
  // Measured at np=4 on 2 cores (docs/benchmarks.md, medians of 5): halving-doubling ran
  // 1 KiB in 6.4 us to the ring's 11.6 and 1 MiB at 2.82 GB/s busbw to 2.07 over shared
  // memory, because a step waits for one partner rather than for a whole ring of ranks to
  // be scheduled. Off a power of two the fold moves the whole buffer twice more between
  // the paired ranks, which costs a bandwidth-bound allreduce more than the ring's extra
  // steps (on a network; on these shared cores the two were within the noise), so large
  // buffers keep the ring. Small ones take recursive doubling with the fold once it needs
  // no more steps than the ring (from 5 ranks; at 48 ranks, 7 steps to 47). 1 KiB, medians
  // of 5, ring / folded recursive doubling: np=3 3.9 / 4.7 us, np=5 15.3 / 10.2, np=6
  // 18.2 / 13.3, np=7 25.5 / 15.3.
  if (asked == AllreduceAlgorithm::kAuto) {
    bool pairwise = isPowerOfTwo(size) || (small && recursiveDoublingSteps(size) <= size - 1);
    asked = pairwise ? AllreduceAlgorithm::kHalvingDoubling : AllreduceAlgorithm::kRing;
  }
  if (asked == AllreduceAlgorithm::kHalvingDoubling) {
    return small ? AllreduceVariant::kRecursiveDoubling : AllreduceVariant::kHalvingDoubling;
  }
  return small ? AllreduceVariant::kRingSmall : AllreduceVariant::kRingLarge;
}

Status allreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op, AllreduceAlgorithm algorithm) {
  switch (chooseAllreduce(t.size(), count * dataTypeSize(type), algorithm)) {
    case AllreduceVariant::kRecursiveDoubling: return recursiveDoublingAllreduce(t, data, count, type, op);
    case AllreduceVariant::kHalvingDoubling: return halvingDoublingAllreduce(t, data, count, type, op);
    case AllreduceVariant::kRingSmall: return ringAllreduceSmall(t, data, count, type, op);
    case AllreduceVariant::kRingLarge: break;
  }
  return ringAllreduceLarge(t, data, count, type, op);
}

std::vector<int> collectivePeers(int rank, int size) {
  std::vector<int> peers;
  if (size == 1) return peers;
  peers.push_back((rank + 1) % size);
  peers.push_back((rank + size - 1) % size);
  FoldSchedule f(rank, size);
  if (f.folded()) peers.push_back(f.pairPartner());
  if (f.participates()) {
    for (int bit = 1; bit < f.activeSize(); bit <<= 1) peers.push_back(f.realRank(f.virtualRank() ^ bit));
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace hvd::collectives
