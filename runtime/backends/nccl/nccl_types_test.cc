// runtime/backends/nccl/nccl_types_test.cc: every hvd type and operation has its own,
// native NCCL counterpart of the same width.
#include <catch2/catch.hpp>

#include <set>

#include "runtime/backends/nccl/nccl_types.h"

using hvd::DataType;
using hvd::ReduceOp;
using namespace hvd::backends::nccl;

namespace {
size_t ncclWidth(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}
}  // namespace

TEST_CASE("every hvd type maps to a distinct NCCL type of the same width") {
  std::set<int> seen;
  for (int i = 0; i < hvd::kDataTypeCount; ++i) {
    auto type = static_cast<DataType>(i);
    ncclDataType_t n = ncclTypeOf(type);
    CHECK(ncclWidth(n) == hvd::dataTypeSize(type));
    CHECK(seen.insert(static_cast<int>(n)).second);
  }
  CHECK(ncclTypeOf(DataType::kBFloat16) == ncclBfloat16);
  CHECK(ncclTypeOf(DataType::kFloat16) == ncclFloat16);
  CHECK(ncclTypeOf(DataType::kUInt8) == ncclUint8);
}

TEST_CASE("every hvd operation maps to a native NCCL op and average is ncclAvg") {
  std::set<int> seen;
  for (int i = 0; i < hvd::kReduceOpCount; ++i) CHECK(seen.insert(static_cast<int>(ncclOpOf(static_cast<ReduceOp>(i)))).second);
  CHECK(ncclOpOf(ReduceOp::kSum) == ncclSum);
  CHECK(ncclOpOf(ReduceOp::kAverage) == ncclAvg);
  CHECK(ncclOpOf(ReduceOp::kMin) == ncclMin);
  CHECK(ncclOpOf(ReduceOp::kMax) == ncclMax);
  CHECK(ncclOpOf(ReduceOp::kProduct) == ncclProd);
}
