// collectives/halving_doubling.h: allreduce by pairwise exchanges (halving_schedule.h):
// log2(n) steps per phase where the ring takes n - 1, each step between two ranks only, so
// a pair that is ready goes on without waiting for a whole ring to be scheduled. Off a
// power of two the ranks beyond it fold onto partners first and get the result back last
// (fold_schedule.h): two more steps, each moving the whole buffer between those pairs.
// Every element is reduced in one fixed tree, lower ranks' operands first, so all ranks
// get the same bits.
#pragma once

#include <cstddef>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

// Bandwidth-optimal (Rabenseifner): reduce-scatter by recursive halving, then allgather by
// recursive doubling; each rank sends and receives 2(n-1)/n of the buffer, as in the ring.
// In place; kAverage divides by size.
Status halvingDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op);

// For small buffers: recursive doubling, the whole buffer in each of log2(n) steps (the
// ring's small algorithm needs n - 1). Same contract.
Status recursiveDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op);

}  // namespace hvd::collectives
