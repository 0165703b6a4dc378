// runtime/backends/nccl/nccl_types_test.cc: every hvd type NCCL can reduce and every
// operation has its own, native NCCL counterpart of the same width.
#include <catch2/catch.hpp>

#include <set>
#include <string>

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

TEST_CASE("every hvd type NCCL can reduce maps to a distinct NCCL type of the same width") {
  std::set<int> seen;
  for (int i = 0; i < hvd::kDataTypeCount; ++i) {
    auto type = static_cast<DataType>(i);
    auto reduction = ncclReductionOf(type, ReduceOp::kSum);
    if (type == DataType::kInt16 || type == DataType::kUInt16) {
      REQUIRE(!reduction);
      CHECK(reduction.status().code() == hvd::Errc::kInvalidUsage);
      CHECK(reduction.status().message() == "NCCL cannot reduce " + std::string(hvd::dataTypeName(type)) +
                                                " tensors: it has no 16-bit integer type");
      continue;
    }
    REQUIRE(reduction);
    CHECK(ncclWidth(reduction->type) == hvd::dataTypeSize(type));
    if (type != DataType::kBool) CHECK(seen.insert(static_cast<int>(reduction->type)).second);
  }
  CHECK(ncclReductionOf(DataType::kBFloat16, ReduceOp::kSum)->type == ncclBfloat16);
  CHECK(ncclReductionOf(DataType::kFloat16, ReduceOp::kSum)->type == ncclFloat16);
  CHECK(ncclReductionOf(DataType::kUInt8, ReduceOp::kSum)->type == ncclUint8);
}

TEST_CASE("bool reduces in NCCL as bytes: sum and max as max (any), min and product as min (all)") {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    CHECK(ncclReductionOf(DataType::kBool, op)->type == ncclUint8);
    CHECK(ncclReductionOf(DataType::kBool, op)->op == ncclMax);
  }
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kProduct}) CHECK(ncclReductionOf(DataType::kBool, op)->op == ncclMin);
  CHECK(ncclReductionOf(DataType::kFloat32, ReduceOp::kProduct)->op == ncclProd);
}

TEST_CASE("every element-wise hvd operation maps to a native NCCL op and average is ncclAvg") {
  std::set<int> seen;
  for (int i = 0; i < hvd::kElementwiseReduceOpCount; ++i) {
    CHECK(seen.insert(static_cast<int>(ncclOpOf(static_cast<ReduceOp>(i)))).second);
  }
  CHECK(ncclOpOf(ReduceOp::kSum) == ncclSum);
  CHECK(ncclOpOf(ReduceOp::kAverage) == ncclAvg);
  CHECK(ncclOpOf(ReduceOp::kMin) == ncclMin);
  CHECK(ncclOpOf(ReduceOp::kMax) == ncclMax);
  CHECK(ncclOpOf(ReduceOp::kProduct) == ncclProd);
}

TEST_CASE("NCCL's reductions have no Adasum for any type and say where it runs instead") {
  for (int t = 0; t < hvd::kDataTypeCount; ++t) {
    auto refused = ncclReductionOf(static_cast<DataType>(t), ReduceOp::kAdasum);
    REQUIRE_FALSE(refused);
    CHECK(refused.status().message().find("Adasum") != std::string::npos);
    CHECK(refused.status().hint().find("host backend") != std::string::npos);
  }
}
