// collectives/reduce.cc: one template per operation, instantiated per type.
#include "collectives/reduce.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace hvd::collectives {
namespace {

// __restrict: the buffers never overlap (the caller's data and a receive buffer), and
// saying so lets the compiler vectorise without a run-time overlap check. CMake compiles
// this file with -O3; docs/benchmarks.md records the check that every loop vectorises.
template <typename T, typename F>
void apply(void* dst, const void* src, size_t count, Operands order, F f) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  if (order == Operands::kTargetFirst) {
    for (size_t i = 0; i < count; ++i) d[i] = f(d[i], s[i]);
  } else {
    for (size_t i = 0; i < count; ++i) d[i] = f(s[i], d[i]);
  }
}

template <typename T>
void reduceTyped(void* dst, const void* src, size_t count, ReduceOp op, Operands order) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: apply<T>(dst, src, count, order, [](T a, T b) { return static_cast<T>(a + b); }); break;
    case ReduceOp::kMin: apply<T>(dst, src, count, order, [](T a, T b) { return std::min(a, b); }); break;
    case ReduceOp::kMax: apply<T>(dst, src, count, order, [](T a, T b) { return std::max(a, b); }); break;
    case ReduceOp::kProduct: apply<T>(dst, src, count, order, [](T a, T b) { return static_cast<T>(a * b); }); break;
    case ReduceOp::kAdasum: break;  // never asked: it combines whole tensors (adasum.h)
  }
}

// 16-bit floats: widen a block to float, reduce, narrow back.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduceHalfLike(void* dst, const void* src, size_t count, ReduceOp op, Operands order) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  constexpr size_t kBlock = 256;
  float a[kBlock], b[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    size_t n = std::min(kBlock, count - start);
    for (size_t i = 0; i < n; ++i) a[i] = Widen(d[start + i]), b[i] = Widen(s[start + i]);
    reduceTyped<float>(a, b, n, op, order);
    for (size_t i = 0; i < n; ++i) d[start + i] = Narrow(a[i]);
  }
}

}  // namespace

ReduceOp logicalOf(ReduceOp op) {
  // On bytes that are 0 or 1, max is "or" and min is "and".
  return op == ReduceOp::kMin || op == ReduceOp::kProduct ? ReduceOp::kMin : ReduceOp::kMax;
}

void reduceInto(void* dst, const void* src, size_t count, DataType type, ReduceOp op, Operands order) {
  switch (type) {
    case DataType::kFloat32: reduceTyped<float>(dst, src, count, op, order); break;
    case DataType::kFloat64: reduceTyped<double>(dst, src, count, op, order); break;
    case DataType::kFloat16: reduceHalfLike<halfToFloat, floatToHalf>(dst, src, count, op, order); break;
    case DataType::kBFloat16: reduceHalfLike<bfloat16ToFloat, floatToBfloat16>(dst, src, count, op, order); break;
    case DataType::kInt8: reduceTyped<int8_t>(dst, src, count, op, order); break;
    case DataType::kUInt8: reduceTyped<uint8_t>(dst, src, count, op, order); break;
    case DataType::kInt32: reduceTyped<int32_t>(dst, src, count, op, order); break;
    case DataType::kInt64: reduceTyped<int64_t>(dst, src, count, op, order); break;
    case DataType::kInt16: reduceTyped<int16_t>(dst, src, count, op, order); break;
    case DataType::kUInt16: reduceTyped<uint16_t>(dst, src, count, op, order); break;
    case DataType::kBool: reduceTyped<uint8_t>(dst, src, count, logicalOf(op), order); break;
  }
}

void divideForAverage(void* data, size_t count, DataType type, int divisor) {
  auto divide = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_floating_point_v<T>) {
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
    } else {
      // In a wide type: the world size as int8 is -128 at 128 ranks (the sign flips) and 0
      // at 256 (a division by zero: SIGFPE on every rank).
      const long long by = divisor;
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(static_cast<long long>(p[i]) / by);
    }
  };
  switch (type) {
    case DataType::kFloat32: divide(static_cast<float*>(data)); break;
    case DataType::kFloat64: divide(static_cast<double*>(data)); break;
    case DataType::kInt8: divide(static_cast<int8_t*>(data)); break;
    case DataType::kUInt8: divide(static_cast<uint8_t*>(data)); break;
    case DataType::kInt32: divide(static_cast<int32_t*>(data)); break;
    case DataType::kInt64: divide(static_cast<int64_t*>(data)); break;
    case DataType::kInt16: divide(static_cast<int16_t*>(data)); break;
    case DataType::kUInt16: divide(static_cast<uint16_t*>(data)); break;
    case DataType::kBool: break;  // refused at submission (an average of booleans is not one)
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      bool half = type == DataType::kFloat16;
      uint16_t* p = static_cast<uint16_t*>(data);
      for (size_t i = 0; i < count; ++i) {
        float v = (half ? halfToFloat(p[i]) : bfloat16ToFloat(p[i])) / static_cast<float>(divisor);
        p[i] = half ? floatToHalf(v) : floatToBfloat16(v);
      }
      break;
    }
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while ((mantissa & 0x400) == 0) mantissa <<= 1, ++shift;
      bits = sign | uint32_t(127 - 15 - shift + 1) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));  // inf, nan
  int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);  // overflow to infinity
  if (e <= 0) {                                              // subnormal or zero
    if (e < -10) return sign;
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = static_cast<uint32_t>(e) << 10 | mantissa >> 13, rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | half);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // nan
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace hvd::collectives
