// runtime/common/types.cc: the names and sizes of hvd/types.h's enums, for every layer.
#include "hvd/types.h"

namespace hvd {

size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt8:
    case DataType::kUInt8: return 1;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kInt16:
    case DataType::kUInt16: return 2;
    case DataType::kBool: return 1;
  }
  return 1;
}

std::string_view dataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kBool: return "bool";
  }
  return "?";
}

bool isFloatingPoint(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 || type == DataType::kFloat32 ||
         type == DataType::kFloat64;
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "prod";
    case ReduceOp::kAdasum: return "adasum";
  }
  return "?";
}

}  // namespace hvd
