// collectives/allreduce.cc: the choice of algorithm.
#include "collectives/allreduce.h"

#include <algorithm>

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

Status allreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op, AllreduceAlgorithm algorithm) {
  // Measured at np=4 on 2 cores (docs/benchmarks.md, medians of 5): halving-doubling ran
  // 1 KiB in 6.4 us to the ring's 11.6 and 1 MiB at 2.82 GB/s busbw to 2.07 over shared
  // memory, because a step waits for one partner rather than for a whole ring of ranks to
  // be scheduled. Off a power of two it would need an extra fold step moving the whole
  // buffer, which costs more than the ring's extra steps.
  if (algorithm == AllreduceAlgorithm::kAuto) {
    algorithm = isPowerOfTwo(t.size()) ? AllreduceAlgorithm::kHalvingDoubling : AllreduceAlgorithm::kRing;
  }
  bool small = count * dataTypeSize(type) <= kSmallAllreduceBytes;
  if (algorithm == AllreduceAlgorithm::kHalvingDoubling) {
    return small ? recursiveDoublingAllreduce(t, data, count, type, op)
                 : halvingDoublingAllreduce(t, data, count, type, op);
  }
  return small ? ringAllreduceSmall(t, data, count, type, op) : ringAllreduceLarge(t, data, count, type, op);
}

std::vector<int> collectivePeers(int rank, int size) {
  std::vector<int> peers;
  if (size == 1) return peers;
  peers.push_back((rank + 1) % size);
  peers.push_back((rank + size - 1) % size);
  if (isPowerOfTwo(size)) {
    for (int bit = 1; bit < size; bit <<= 1) peers.push_back(rank ^ bit);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace hvd::collectives
