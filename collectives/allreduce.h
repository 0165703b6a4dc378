// collectives/allreduce.h: which allreduce runs, and so which peers a rank must be able to
// reach. The choice depends only on the rank count, the buffer's size and the algorithm
// asked for (the same on every rank: hvdrun gives all ranks one environment), so every
// rank takes the same one.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

enum class AllreduceAlgorithm {
  kAuto,             // halving-doubling on a power-of-two rank count; otherwise the ring,
                     // but recursive doubling (folded) for small buffers from 5 ranks
  kRing,             // ring_collectives.h, any rank count
  kHalvingDoubling,  // halving_doubling.h, any rank count (folded off a power of two)
};

// "auto", "ring", "halving-doubling"; nullopt for anything else.
std::optional<AllreduceAlgorithm> parseAllreduceAlgorithm(std::string_view name);

// What runs: the latency-bound variant of the chosen family up to kSmallAllreduceBytes,
// the bandwidth-optimal one above.
inline constexpr size_t kSmallAllreduceBytes = 16 * 1024;
enum class AllreduceVariant { kRingSmall, kRingLarge, kRecursiveDoubling, kHalvingDoubling };
AllreduceVariant chooseAllreduce(int size, size_t bytes, AllreduceAlgorithm asked);

// In place, by chooseAllreduce's variant; kAverage divides by size.
Status allreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op,
                 AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);

// The ranks `rank` exchanges with in any collective here: its ring neighbours, its fold
// partner (fold_schedule.h) and its halving-doubling partners. Sorted, without `rank`.
std::vector<int> collectivePeers(int rank, int size);

}  // namespace hvd::collectives
