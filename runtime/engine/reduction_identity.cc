// runtime/engine/reduction_identity.cc: identities per type, float16 and bfloat16 as bit patterns.
#include "runtime/engine/reduction_identity.h"

#include <cstdint>
#include <cstring>
#include <limits>

namespace hvd::engine {
namespace {

template <typename T>
T identityOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    case ReduceOp::kMax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case ReduceOp::kProduct: return T(1);
    default: return T(0);
  }
}

// Half-width floats: +inf, -inf and 1 by bits.
std::uint16_t halfIdentity(ReduceOp op, bool bfloat) {
  switch (op) {
    case ReduceOp::kMin: return bfloat ? 0x7f80 : 0x7c00;
    case ReduceOp::kMax: return bfloat ? 0xff80 : 0xfc00;
    case ReduceOp::kProduct: return bfloat ? 0x3f80 : 0x3c00;
    default: return 0;
  }
}

template <typename T>
void fill(void* data, size_t count, T value) {
  auto* out = static_cast<std::byte*>(data);
  for (size_t i = 0; i < count; ++i) std::memcpy(out + i * sizeof(T), &value, sizeof(T));
}

}  // namespace

void fillReductionIdentity(void* data, size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat32: return fill(data, count, identityOf<float>(op));
    case DataType::kFloat64: return fill(data, count, identityOf<double>(op));
    case DataType::kFloat16: return fill(data, count, halfIdentity(op, false));
    case DataType::kBFloat16: return fill(data, count, halfIdentity(op, true));
    case DataType::kInt8: return fill(data, count, identityOf<std::int8_t>(op));
    case DataType::kUInt8: return fill(data, count, identityOf<std::uint8_t>(op));
    case DataType::kInt32: return fill(data, count, identityOf<std::int32_t>(op));
    case DataType::kInt64: return fill(data, count, identityOf<std::int64_t>(op));
    case DataType::kInt16: return fill(data, count, identityOf<std::int16_t>(op));
    case DataType::kUInt16: return fill(data, count, identityOf<std::uint16_t>(op));
    case DataType::kBool: {
      // Bytes of 0 and 1: sum and max are "any" (0 leaves it), min and product "all" (1 does).
      bool all = op == ReduceOp::kMin || op == ReduceOp::kProduct;
      return fill(data, count, static_cast<std::uint8_t>(all ? 1 : 0));
    }
  }
}

}  // namespace hvd::engine
