// runtime/engine/fusion_plan.h: which of a cycle's ready requests run together. Allreduces
// of the same type, operation and device, and host reducescatters of the same type and
// operation, are packed, in order, into groups of at most the fusion threshold's bytes (one
// larger than it runs alone); everything else runs alone. A group holds one kind of request.
// Pure and deterministic: every rank plans the same list the same way.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::engine {

struct FusionGroup {
  std::vector<size_t> members;  // indexes into the ready list, in list order
  std::uint64_t bytes = 0;
};

// Groups in the order of their first member. thresholdBytes 0: every request alone.
std::vector<FusionGroup> planFusion(std::span<const Spec> ready, std::uint64_t thresholdBytes);

}  // namespace hvd::engine
