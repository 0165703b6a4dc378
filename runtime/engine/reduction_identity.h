// runtime/engine/reduction_identity.h: what a rank that called join() contributes to the
// allreduces the others still run: the value that leaves every operand as it was, so the
// result is that of the ranks that have not joined (Horovod's joined ranks send zeros,
// which is the same for sum and average and would corrupt min, max and product).
#pragma once

#include <cstddef>

#include "hvd/types.h"

namespace hvd::engine {

// data[0..count) = the identity of `op` on `type`: 0 for sum and average (and bool's
// "any"), the largest value (+inf for floats) for min, the lowest (-inf) for max, 1 for
// product (bool's "all": true).
void fillReductionIdentity(void* data, size_t count, DataType type, ReduceOp op);

}  // namespace hvd::engine
