// hvd/types.h: the element types and reduction operations of the public API. The
// collectives layer uses these same enums (collectives/reduce.h), so nothing converts.
#pragma once

#include <cstddef>
#include <string_view>

namespace hvd {

// Appended, never reordered: the values are the C API's (hvd_c.h) and travel between ranks.
// kBool is one byte, 0 or 1; reduced it is logical: sum and max are "any", min and product
// "all", and average is refused.
enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kInt16, kUInt16, kBool };
// kAdasum is Horovod's Adasum: it combines whole tensors (each tensor's dot product and
// norms decide how much of each rank's tensor the result keeps), not element by element, so
// only allreduce takes it, on floating-point types (collectives/adasum.h).
enum class ReduceOp { kSum, kAverage, kMin, kMax, kProduct, kAdasum };

// Where a tensor's memory lives. CPU tensors go to the CPU backends (hvd's ring, MPI);
// CUDA tensors to the GPU backends when one runs.
enum class Device { kCpu, kCuda };

inline constexpr int kDataTypeCount = 11;
inline constexpr int kReduceOpCount = 6;
// kSum .. kProduct: the operations that reduce element by element (every one but kAdasum).
inline constexpr int kElementwiseReduceOpCount = 5;

// 4, 8, 2, 2, 1, 1, 4, 8, 2, 2, 1 bytes.
size_t dataTypeSize(DataType type);
// float16, bfloat16, float32 and float64: the types Adasum combines.
bool isFloatingPoint(DataType type);
// "float32", ..., as the benchmarks and error messages print them.
std::string_view dataTypeName(DataType type);
// "sum", "avg", "min", "max", "prod", "adasum".
std::string_view reduceOpName(ReduceOp op);

}  // namespace hvd
