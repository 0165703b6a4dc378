// collectives/adasum.h: Horovod's Adasum allreduce over the pairwise exchanges of
// halving-doubling (halving_schedule.h), as Horovod's vector-halving distance-doubling:
// at step s a rank and its partner each combine half of the range they share, the lower
// group's vector as the left operand (adasum_combine.h); the dot product and norms of each
// tensor are summed first over the 2^(s+1) ranks whose slices make up the whole tensors
// (recursive doubling of a few doubles per tensor). Then an allgather by recursive doubling
// hands every rank the whole result. The result is the balanced tree of pairwise
// combinations over the ranks in order: ((r0 r1) (r2 r3)) ... Off a power of two the ranks
// beyond it fold first (fold_schedule.h): the even rank of each pair combines its pair's
// two tensors alone, so those pairs enter the tree as one leaf. Horovod refuses such rank
// counts; this keeps its tree on powers of two. Each rank computes its own slices, so
// every rank ends with the same bits.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

// In place. `tensorCounts`: the elements of each tensor packed one after another in
// `data`, the same list on every rank; each tensor is combined on its own (a fused buffer
// of many gradients keeps its per-tensor coefficients). kInvalidArgument before any
// traffic for a type adasumTakes() refuses. `scratch` receives the other ranks' operands
// (half the buffer; all of it on a rank a pair folds onto): grown as needed and kept by the
// caller between calls, since
// allocating it anew cost a 64 MiB allreduce more than the arithmetic (page faults).
// Blocks; errors as Transport::exchangeWith.
Status adasumAllreduce(Transport& t, void* data, DataType type, std::span<const size_t> tensorCounts,
                       std::vector<std::byte>& scratch);

}  // namespace hvd::collectives
