// collectives/exchange_reduce.h: the step every reducing algorithm repeats: send one part
// of the buffer while the part that arrives is reduced into another as it lands.
#pragma once

#include <cstddef>
#include <span>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

// Sends `send` to `to` while `count` elements from `from` are reduced into `target` as
// they arrive (straight out of shared memory where the transport has it), each piece while
// it is still in cache. `send` must not overlap target's elements.
// Blocks; errors as Transport::exchangeWith.
Status exchangeAndReduce(Transport& t, int to, std::span<const std::byte> send, int from, void* target,
                         size_t count, DataType type, ReduceOp op, Operands order);

}  // namespace hvd::collectives
