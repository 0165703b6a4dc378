// runtime/backends/nccl/nccl_types.cc: the maps, exhaustive over hvd's enums.
#include "runtime/backends/nccl/nccl_types.h"

#include <string>

#include "collectives/reduce.h"

namespace hvd::backends::nccl {

ncclRedOp_t ncclOpOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAverage: return ncclAvg;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kAdasum: break;  // refused by ncclReductionOf
  }
  return ncclSum;  // unreachable
}

Result<NcclReduction> ncclReductionOf(DataType type, ReduceOp op) {
  if (op == ReduceOp::kAdasum) {
    return Status(Errc::kInvalidUsage, "NCCL has no Adasum: it reduces element by element")
        .withHint("the NCCL backend runs Adasum on the host backend, through host memory (adasum())");
  }
  switch (type) {
    case DataType::kFloat32: return NcclReduction{ncclFloat32, ncclOpOf(op)};
    case DataType::kFloat64: return NcclReduction{ncclFloat64, ncclOpOf(op)};
    case DataType::kFloat16: return NcclReduction{ncclFloat16, ncclOpOf(op)};
    case DataType::kBFloat16: return NcclReduction{ncclBfloat16, ncclOpOf(op)};
    case DataType::kInt8: return NcclReduction{ncclInt8, ncclOpOf(op)};
    case DataType::kUInt8: return NcclReduction{ncclUint8, ncclOpOf(op)};
    case DataType::kInt32: return NcclReduction{ncclInt32, ncclOpOf(op)};
    case DataType::kInt64: return NcclReduction{ncclInt64, ncclOpOf(op)};
    case DataType::kBool: return NcclReduction{ncclUint8, ncclOpOf(collectives::logicalOf(op))};
    case DataType::kInt16:
    case DataType::kUInt16: break;
  }
  return Status(Errc::kInvalidUsage, std::string("NCCL cannot reduce ") + std::string(dataTypeName(type)) +
                                          " tensors: it has no 16-bit integer type")
      .withHint("reduce them on the CPU, or as int32 on the GPU");
}

}  // namespace hvd::backends::nccl
