// tests/support/serial_reduce.h: the answer every allreduce test compares with: the ranks'
// values reduced one after another in rank order, in double (exact for the small integers
// the tests use); average divides once at the end, truncating for integer types. bool is
// logical: sum and max "any", min and product "all" (average is refused, never asked).
#pragma once

#include <algorithm>
#include <functional>

#include "hvd/types.h"

namespace hvd::test {

inline bool isIntegerType(DataType type) {
  return type == DataType::kInt8 || type == DataType::kUInt8 || type == DataType::kInt32 || type == DataType::kInt64 ||
         type == DataType::kInt16 || type == DataType::kUInt16;
}

inline double serialReduce(DataType type, ReduceOp op, int size, const std::function<double(int rank)>& valueOf) {
  double acc = valueOf(0);
  for (int r = 1; r < size; ++r) {
    double v = valueOf(r);
    if (type == DataType::kBool) {
      bool all = op == ReduceOp::kMin || op == ReduceOp::kProduct;
      acc = all ? (acc != 0 && v != 0) : (acc != 0 || v != 0);
      continue;
    }
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAdasum: break;  // not element-wise: tested on its own
    }
  }
  if (op == ReduceOp::kAverage) {
    acc = isIntegerType(type) ? static_cast<double>(static_cast<long long>(acc) / size) : acc / size;
  }
  return acc;
}

}  // namespace hvd::test
