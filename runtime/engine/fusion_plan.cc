// runtime/engine/fusion_plan.cc: one open group per (kind, type, op, device); a request that
// would overflow its group closes it and opens the next.
#include "runtime/engine/fusion_plan.h"

#include <map>
#include <tuple>

namespace hvd::engine {

std::vector<FusionGroup> planFusion(std::span<const Spec> ready, std::uint64_t thresholdBytes) {
  std::vector<FusionGroup> groups;
  std::map<std::tuple<OpKind, DataType, ReduceOp, Device>, size_t> open;  // key -> index in groups
  for (size_t i = 0; i < ready.size(); ++i) {
    const Spec& spec = ready[i];
    // Reducescatters on the host only: the engine packs their parts rank by rank with memcpy.
    bool kind = spec.kind == OpKind::kAllreduce || (spec.kind == OpKind::kReducescatter && spec.device == Device::kCpu);
    bool fusable = kind && thresholdBytes > 0 && spec.bytes() <= thresholdBytes;
    if (!fusable) {
      groups.push_back({{i}, spec.bytes()});
      continue;
    }
    auto key = std::make_tuple(spec.kind, spec.type, spec.op, spec.device);
    auto it = open.find(key);
    if (it != open.end() && groups[it->second].bytes + spec.bytes() <= thresholdBytes) {
      groups[it->second].members.push_back(i);
      groups[it->second].bytes += spec.bytes();
      continue;
    }
    open[key] = groups.size();
    groups.push_back({{i}, spec.bytes()});
  }
  return groups;
}

}  // namespace hvd::engine
