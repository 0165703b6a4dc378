// runtime/engine/request.h: what one collective request is, in the terms every rank must
// agree on before it runs (kind, type, count, op, root, device), and how that is described
// in errors and hashed for the control path.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hvd/types.h"

namespace hvd::engine {

// kReducescatter: Horovod's; every rank gets its share of the reduced tensor's rows
// (reducescatterShare). kAlltoall: Horovod's; every rank sends each rank some of its rows.
enum class OpKind : std::uint8_t { kAllreduce, kBroadcast, kAllgather, kBarrier, kReducescatter, kAlltoall };
inline constexpr int kOpKindCount = 6;

// Kinds whose count is each rank's own (it may differ between ranks) and whose rows must agree.
inline bool sharesRows(OpKind kind) { return kind == OpKind::kAllgather || kind == OpKind::kAlltoall; }
std::string_view opKindName(OpKind kind);  // "allreduce", ...

// An allgather's rows: its tensor's shape past the first dimension, which every rank must
// give alike (the first dimension may differ). Held inline, so a Spec stays a value: at
// most kMaxDims extents below 2^32 each; past that only `elements` is compared.
struct RowShape {
  static constexpr size_t kMaxDims = 8;
  static constexpr std::uint8_t kNotHeld = 0xff;  // too many or too large extents
  std::uint64_t elements = 1;  // elements per row: the extents' product
  std::uint8_t dims = 0;       // 0: the rows are single elements (a 1-D tensor)
  std::array<std::uint32_t, kMaxDims> extents{};
  bool operator==(const RowShape&) const = default;
};

// The rows of a tensor of shape (first, trailing...): trailing.
RowShape rowShapeOf(std::span<const std::int64_t> trailing);

// "(2, 3)", "()"; "(N elements)" when the extents are not held.
std::string describe(const RowShape& rows);

struct Spec {
  OpKind kind = OpKind::kAllreduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // allreduce only
  int root = 0;                  // broadcast only
  std::uint64_t count = 0;       // elements; for allgather this rank's own share
  Device device = Device::kCpu;
  // allgather, reducescatter and alltoall: the rows every rank must give alike; allreduce
  // and broadcast: the tensor's shape past its first dimension when the caller said it
  // (dims 0: 1-D or not said), so equal counts in other shapes disagree.
  RowShape rows{};
  bool operator==(const Spec&) const = default;
  std::uint64_t bytes() const { return count * dataTypeSize(type); }
};

// The rows of a reducescatter of `rows` rows that `rank` of `size` gets, as Horovod splits
// them: rows / size each, and one more for each of the first rows % size ranks.
struct Share {
  std::uint64_t firstRow = 0, rows = 0;
};
Share reducescatterShare(std::uint64_t rows, int rank, int size);

// An allreduce's or broadcast's whole shape: "(2, 6)", "(12,)" when it carries no rows.
std::string describeShape(const Spec& spec);

// "allreduce of 1000 float32 (sum)", "broadcast of 12 uint8 from root 0",
// "allreduce of 12 float32 (sum) of shape (2, 6)" when the caller gave its shape,
// "allgather of 3 int32" (the count is this rank's; "... in rows of shape (2, 3)" for a
// tensor of more than one dimension), "barrier".
std::string describe(const Spec& spec);

// Whether requests from two ranks can run as one collective: everything equal, except
// that allgather shares may differ in length (not in their rows).
bool compatible(const Spec& a, const Spec& b);

// Equal for compatible specs (a multiplicative mix of the fields that must agree), so ranks can check
// agreement with a few bytes on the control path.
std::uint64_t agreementHash(const Spec& spec, std::uint64_t seed = 14695981039346656037ull);

}  // namespace hvd::engine
