// runtime/engine/request.h: what one collective request is, in the terms every rank must
// agree on before it runs (kind, type, count, op, root, device), and how that is described
// in errors and hashed for the control path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hvd/types.h"

namespace hvd::engine {

enum class OpKind : std::uint8_t { kAllreduce, kBroadcast, kAllgather, kBarrier };
std::string_view opKindName(OpKind kind);  // "allreduce", ...

struct Spec {
  OpKind kind = OpKind::kAllreduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // allreduce only
  int root = 0;                  // broadcast only
  std::uint64_t count = 0;       // elements; for allgather this rank's own share
  Device device = Device::kCpu;
  bool operator==(const Spec&) const = default;
  std::uint64_t bytes() const { return count * dataTypeSize(type); }
};

// "allreduce of 1000 float32 (sum)", "broadcast of 12 uint8 from root 0",
// "allgather of 3 int32" (the count is this rank's), "barrier".
std::string describe(const Spec& spec);

// Whether requests from two ranks can run as one collective: everything equal, except
// that allgather shares may differ in length.
bool compatible(const Spec& a, const Spec& b);

// Equal for compatible specs (a multiplicative mix of the fields that must agree), so ranks can check
// agreement with a few bytes on the control path.
std::uint64_t agreementHash(const Spec& spec, std::uint64_t seed = 14695981039346656037ull);

}  // namespace hvd::engine
