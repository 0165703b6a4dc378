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
  kAuto,             // halving-doubling on a power-of-two rank count, the ring otherwise
  kRing,             // ring_collectives.h, any rank count
  kHalvingDoubling,  // halving_doubling.h, power-of-two rank counts only
};

// "auto", "ring", "halving-doubling"; nullopt for anything else.
std::optional<AllreduceAlgorithm> parseAllreduceAlgorithm(std::string_view name);

// In place; kAverage divides by size. Up to kSmallAllreduceBytes the latency-bound variant
// of the chosen family, above it the bandwidth-optimal one. kInvalidArgument for
// kHalvingDoubling on a rank count that is not a power of two.
Status allreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op,
                 AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);
inline constexpr size_t kSmallAllreduceBytes = 16 * 1024;

// The ranks `rank` exchanges with in any collective here: its ring neighbours and, on a
// power-of-two rank count, its halving-doubling partners. Sorted, without `rank` itself.
std::vector<int> collectivePeers(int rank, int size);

}  // namespace hvd::collectives
