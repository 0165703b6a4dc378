// collectives/reduce_test.cc: every type and operation against a scalar computation;
// half-precision conversions against known values.
#include "collectives/reduce.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace hvd::collectives;

namespace {

template <typename T>
void checkOps(DataType type) {
  std::mt19937 rng(3);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(257), size_t(1000)}) {
      std::vector<T> a(n), b(n);
      for (size_t i = 0; i < n; ++i) {
        a[i] = static_cast<T>(static_cast<int>(rng() % 11) - 5);
        b[i] = static_cast<T>(static_cast<int>(rng() % 11) - 5);
      }
      std::vector<T> expected(n);
      for (size_t i = 0; i < n; ++i) {
        switch (op) {
          case ReduceOp::kSum:
          case ReduceOp::kAverage: expected[i] = static_cast<T>(a[i] + b[i]); break;
          case ReduceOp::kMin: expected[i] = std::min(a[i], b[i]); break;
          case ReduceOp::kMax: expected[i] = std::max(a[i], b[i]); break;
          case ReduceOp::kProduct: expected[i] = static_cast<T>(a[i] * b[i]); break;
          case ReduceOp::kAdasum: break;  // not an element-wise operation
        }
      }
      reduceInto(a.data(), b.data(), n, type, op);
      INFO(dataTypeName(type) << " " << reduceOpName(op) << " n=" << n);
      REQUIRE(a == expected);
    }
  }
}

}  // namespace

TEST_CASE("every integer and float type reduces like a scalar loop for every operation", "[unit][collectives]") {
  checkOps<float>(DataType::kFloat32);
  checkOps<double>(DataType::kFloat64);
  checkOps<int8_t>(DataType::kInt8);
  checkOps<int32_t>(DataType::kInt32);
  checkOps<int64_t>(DataType::kInt64);
  checkOps<int16_t>(DataType::kInt16);
  checkOps<uint16_t>(DataType::kUInt16);
  std::vector<uint8_t> a{1, 5, 200}, b{2, 3, 50};
  reduceInto(a.data(), b.data(), 3, DataType::kUInt8, ReduceOp::kMax);
  CHECK(a == std::vector<uint8_t>{2, 5, 200});
}

TEST_CASE("bool reduces as logic: sum and max are any, min and product are all", "[unit][collectives]") {
  const std::vector<uint8_t> a{0, 0, 1, 1}, b{0, 1, 0, 1};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    auto d = a;
    reduceInto(d.data(), b.data(), 4, DataType::kBool, op);
    CHECK(d == std::vector<uint8_t>{0, 1, 1, 1});  // a sum of bytes would give 2 for the last
  }
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kProduct}) {
    auto d = a;
    reduceInto(d.data(), b.data(), 4, DataType::kBool, op);
    CHECK(d == std::vector<uint8_t>{0, 0, 0, 1});
  }
}

TEST_CASE("float16 and bfloat16 convert exactly where the format can and round to nearest even", "[unit][collectives]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(1e6f) == 0x7c00);                 // overflow to infinity
  CHECK(floatToHalf(5.960464477539063e-8f) == 0x0001);  // smallest subnormal
  CHECK(halfToFloat(0x0001) == 5.960464477539063e-8f);
  CHECK(halfToFloat(0x3555) == Approx(0.33325195f));
  CHECK(floatToHalf(1.0f + 1.0f / 2048) == 0x3c00);   // a tie rounds to even
  for (uint32_t h = 0; h < 0x7c00; ++h) REQUIRE(floatToHalf(halfToFloat(static_cast<uint16_t>(h))) == h);
  CHECK(floatToBfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16ToFloat(0x4049) == 3.140625f);
  CHECK(floatToBfloat16(1.00390625f) == 0x3f80);      // a tie rounds to even
}

TEST_CASE("half-precision sums are computed in float and averages divide once", "[unit][collectives]") {
  std::vector<uint16_t> a{floatToHalf(1.5f), floatToHalf(-3.0f)}, b{floatToHalf(2.25f), floatToHalf(1.0f)};
  reduceInto(a.data(), b.data(), 2, DataType::kFloat16, ReduceOp::kSum);
  CHECK(halfToFloat(a[0]) == 3.75f);
  CHECK(halfToFloat(a[1]) == -2.0f);
  divideForAverage(a.data(), 2, DataType::kFloat16, 2);
  CHECK(halfToFloat(a[0]) == 1.875f);
  std::vector<uint16_t> c{floatToBfloat16(8.0f)}, d{floatToBfloat16(0.5f)};
  reduceInto(c.data(), d.data(), 1, DataType::kBFloat16, ReduceOp::kProduct);
  CHECK(bfloat16ToFloat(c[0]) == 4.0f);
}

TEST_CASE("operand order decides min of -0 and +0 and max of NaN and a number, in every float width", "[unit][collectives]") {
  using hvd::collectives::Operands;
  // dst op src (kTargetFirst) against src op dst (kSourceFirst): std::min keeps its first
  // operand on a tie, and a comparison with NaN is false.
  std::vector<float> minus{-0.0f}, plus{0.0f};
  std::vector<float> a = minus;
  reduceInto(a.data(), plus.data(), 1, DataType::kFloat32, ReduceOp::kMin, Operands::kTargetFirst);
  CHECK(std::signbit(a[0]));
  a = minus;
  reduceInto(a.data(), plus.data(), 1, DataType::kFloat32, ReduceOp::kMin, Operands::kSourceFirst);
  CHECK_FALSE(std::signbit(a[0]));
  std::vector<double> n{std::nan("")}, one{1.0};
  std::vector<double> b = n;
  reduceInto(b.data(), one.data(), 1, DataType::kFloat64, ReduceOp::kMax, Operands::kTargetFirst);
  CHECK(std::isnan(b[0]));
  b = n;
  reduceInto(b.data(), one.data(), 1, DataType::kFloat64, ReduceOp::kMax, Operands::kSourceFirst);
  CHECK(b[0] == 1.0);
  std::vector<uint16_t> h{floatToHalf(-0.0f)}, hp{floatToHalf(0.0f)};
  reduceInto(h.data(), hp.data(), 1, DataType::kFloat16, ReduceOp::kMin, Operands::kSourceFirst);
  CHECK(h[0] == hp[0]);
}

TEST_CASE("an average of narrow integers divides by the world size itself however many ranks there are",
          "[unit][collectives]") {
  // 128 ranks as int8 was -128 (the sign flipped); 256 was 0: a division by zero (SIGFPE)
  // on every rank of a 256-rank job averaging int8 or uint8.
  for (int ranks : {3, 127, 128, 256, 300, 70000}) {
    INFO(ranks << " ranks");
    std::vector<int8_t> i8{127, -128, 100, -1};
    divideForAverage(i8.data(), i8.size(), DataType::kInt8, ranks);
    for (size_t k = 0; k < i8.size(); ++k) {
      const int sums[] = {127, -128, 100, -1};
      CHECK(int(i8[k]) == sums[k] / ranks);
    }
    std::vector<uint8_t> u8{255, 9};
    divideForAverage(u8.data(), u8.size(), DataType::kUInt8, ranks);
    CHECK(int(u8[0]) == 255 / ranks);
    CHECK(int(u8[1]) == 9 / ranks);
    std::vector<int16_t> i16{32767, -32768};
    divideForAverage(i16.data(), i16.size(), DataType::kInt16, ranks);
    CHECK(int(i16[0]) == 32767 / ranks);
    CHECK(int(i16[1]) == -32768 / ranks);
    std::vector<uint16_t> u16{65535};
    divideForAverage(u16.data(), u16.size(), DataType::kUInt16, ranks);
    CHECK(int(u16[0]) == 65535 / ranks);
  }
}
