// tests/support/reduce_cases.h: the inputs and serial answers of allreduce tests: small
// integers (non-negative for uint8) in every type, so sums and products stay exact and the
// comparison can be exact too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/reduce.h"
#include "hvd/types.h"
#include "tests/support/serial_reduce.h"

namespace hvd::test {

// Small integers (non-negative for uint8), so sums and products stay exact and the
// comparison can be exact too.
inline double valueFor(hvd::DataType type, int rank, size_t index) {
  double v = static_cast<double>((rank * 7 + static_cast<int>(index) * 3) % 13 - 6);
  if (type == hvd::DataType::kBool) return v > 2 ? 1 : 0;  // mostly false: "any" and "all" both vary
  return type == hvd::DataType::kUInt8 || type == hvd::DataType::kUInt16 ? v + 6 : v;
}

inline void put(hvd::DataType type, std::vector<std::byte>& buf, size_t i, double v) {
  namespace hc = hvd::collectives;
  size_t w = hvd::dataTypeSize(type);
  auto store = [&](auto x) { std::memcpy(buf.data() + i * w, &x, w); };
  switch (type) {
    case hvd::DataType::kFloat32: store(static_cast<float>(v)); break;
    case hvd::DataType::kFloat64: store(v); break;
    case hvd::DataType::kFloat16: store(hc::floatToHalf(static_cast<float>(v))); break;
    case hvd::DataType::kBFloat16: store(hc::floatToBfloat16(static_cast<float>(v))); break;
    case hvd::DataType::kInt8: store(static_cast<std::int8_t>(static_cast<long long>(v))); break;
    case hvd::DataType::kUInt8: store(static_cast<std::uint8_t>(static_cast<long long>(v))); break;
    case hvd::DataType::kInt32: store(static_cast<std::int32_t>(v)); break;
    case hvd::DataType::kInt64: store(static_cast<std::int64_t>(v)); break;
    case hvd::DataType::kInt16: store(static_cast<std::int16_t>(v)); break;
    case hvd::DataType::kUInt16: store(static_cast<std::uint16_t>(v)); break;
    case hvd::DataType::kBool: store(static_cast<std::uint8_t>(v != 0)); break;
  }
}

inline std::vector<std::byte> input(hvd::DataType type, int rank, size_t count) {
  std::vector<std::byte> buf(count * hvd::dataTypeSize(type));
  for (size_t i = 0; i < count; ++i) put(type, buf, i, valueFor(type, rank, i));
  return buf;
}

// The serial answer, reduced in rank order.
inline std::vector<std::byte> expected(hvd::DataType type, hvd::ReduceOp op, int size, size_t count) {
  std::vector<std::byte> buf(count * hvd::dataTypeSize(type));
  for (size_t i = 0; i < count; ++i) {
    put(type, buf, i, serialReduce(type, op, size, [&](int r) { return valueFor(type, r, i); }));
  }
  return buf;
}

// Products of 8 ranks' values overflow the narrow types (and their wrap differs from the
// serial double): products are checked on the wide types only.
// An average of bools is refused (hvd/types.h).
inline bool checkable(hvd::DataType type, hvd::ReduceOp op) {
  bool narrow = type == hvd::DataType::kInt8 || type == hvd::DataType::kUInt8 || type == hvd::DataType::kFloat16 ||
                type == hvd::DataType::kBFloat16 || type == hvd::DataType::kInt16 || type == hvd::DataType::kUInt16;
  if (type == hvd::DataType::kBool) return op != hvd::ReduceOp::kAverage;
  return !(narrow && op == hvd::ReduceOp::kProduct);
}

}  // namespace hvd::test
