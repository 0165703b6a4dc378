// collectives/combine_allreduce.h: a small allreduce whose reduction is the caller's, for
// buffers that hold more than one type: the engine's control bytes (a byte-wise minimum)
// with the next blocking request's data riding along, so that one exchange carries both.
// Recursive doubling on the largest power of two not above the rank count, the other
// ranks folded in first (fold_schedule.h); each buffer is combined whole, lower ranks'
// operands first, in the same tree as recursiveDoublingAllreduce, so every rank gets the
// same bytes (and a typed lane the same bits as that allreduce gives).
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

// dst = dst op src over the whole buffer; `order` says which operand comes first. Runs on
// the calling thread during the call; must not keep the pointers.
using Combine = std::function<void(std::byte* dst, const std::byte* src, Operands order)>;

// In place; blocks like Transport::exchangeWith; errors name the peer. Meant for small
// buffers: each step moves the whole buffer.
Status combineAllreduce(Transport& t, std::span<std::byte> data, const Combine& combine);

}  // namespace hvd::collectives
