// collectives/adasum_combine_test.cc: Adasum's pairwise rule on vectors whose result is
// known by hand, for every type it takes.
#include "collectives/adasum_combine.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

using hvd::collectives::AdasumCoefficients;
using hvd::collectives::adasumApply;
using hvd::collectives::adasumCoefficients;
using hvd::collectives::adasumTakes;
using hvd::collectives::adasumTerms;
using hvd::collectives::DataType;

namespace {

// Buffers of `type` from doubles and back.
std::vector<std::byte> bufferOf(DataType type, const std::vector<double>& values) {
  const size_t width = hvd::collectives::dataTypeSize(type);
  std::vector<std::byte> out(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    std::byte* at = out.data() + i * width;
    if (type == DataType::kFloat32) {
      float v = static_cast<float>(values[i]);
      std::memcpy(at, &v, 4);
    } else if (type == DataType::kFloat64) {
      std::memcpy(at, &values[i], 8);
    } else {
      const float f = static_cast<float>(values[i]);
      std::uint16_t h = type == DataType::kFloat16 ? hvd::collectives::floatToHalf(f)
                                                   : hvd::collectives::floatToBfloat16(f);
      std::memcpy(at, &h, 2);
    }
  }
  return out;
}

std::vector<double> valuesOf(DataType type, const std::vector<std::byte>& buffer) {
  const size_t width = hvd::collectives::dataTypeSize(type);
  std::vector<double> out(buffer.size() / width);
  for (size_t i = 0; i < out.size(); ++i) {
    const std::byte* at = buffer.data() + i * width;
    if (type == DataType::kFloat32) {
      float v;
      std::memcpy(&v, at, 4);
      out[i] = v;
    } else if (type == DataType::kFloat64) {
      std::memcpy(&out[i], at, 8);
    } else {
      std::uint16_t h;
      std::memcpy(&h, at, 2);
      out[i] = type == DataType::kFloat16 ? hvd::collectives::halfToFloat(h) : hvd::collectives::bfloat16ToFloat(h);
    }
  }
  return out;
}

std::vector<double> combined(DataType type, const std::vector<double>& left, const std::vector<double>& right,
                             bool intoLeft) {
  auto l = bufferOf(type, left), r = bufferOf(type, right);
  AdasumCoefficients c = adasumCoefficients(adasumTerms(l.data(), r.data(), left.size(), type));
  if (intoLeft) {
    adasumApply(l.data(), r.data(), left.size(), type, c, true);
    return valuesOf(type, l);
  }
  adasumApply(r.data(), l.data(), left.size(), type, c, false);
  return valuesOf(type, r);
}

const DataType kFloats[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};

}  // namespace

TEST_CASE("Adasum adds orthogonal tensors and averages equal ones", "[collectives]") {
  for (DataType type : kFloats) {
    for (bool intoLeft : {true, false}) {
      INFO(hvd::collectives::dataTypeName(type) << (intoLeft ? " into left" : " into right"));
      CHECK(combined(type, {1, 0, 2, 0}, {0, 3, 0, -1}, intoLeft) == std::vector<double>{1, 3, 2, -1});
      CHECK(combined(type, {1, -2, 4, 0.5}, {1, -2, 4, 0.5}, intoLeft) == std::vector<double>{1, -2, 4, 0.5});
    }
  }
}

TEST_CASE("Adasum of opposite tensors keeps both and of a zero tensor keeps the other", "[collectives]") {
  for (DataType type : kFloats) {
    INFO(hvd::collectives::dataTypeName(type));
    // l.r = -|l|^2: both coefficients 1.5, so 1.5 l - 1.5 l.
    CHECK(combined(type, {2, -1}, {-2, 1}, true) == std::vector<double>{0, 0});
    CHECK(combined(type, {0, 0, 0}, {1, 2, 3}, true) == std::vector<double>{1, 2, 3});
    CHECK(combined(type, {1, 2, 3}, {0, 0, 0}, false) == std::vector<double>{1, 2, 3});
  }
}

TEST_CASE("Adasum of parallel tensors of different lengths follows the formula", "[collectives]") {
  // l = (1, 0), r = (4, 0): l.r = 4, |l|^2 = 1, |r|^2 = 16: (1 - 2) l + (1 - 1/8) r = (2.5, 0).
  CHECK(combined(DataType::kFloat64, {1, 0}, {4, 0}, true) == std::vector<double>{2.5, 0});
  // A general pair against the formula written out.
  const std::vector<double> l{0.3, -1.2, 2.5, 0.7}, r{1.1, 0.4, -0.6, 2.0};
  double dot = 0, ll = 0, rr = 0;
  for (size_t i = 0; i < l.size(); ++i) dot += l[i] * r[i], ll += l[i] * l[i], rr += r[i] * r[i];
  std::vector<double> got = combined(DataType::kFloat64, l, r, false);
  for (size_t i = 0; i < l.size(); ++i) {
    CHECK(got[i] == Approx((1 - dot / (2 * ll)) * l[i] + (1 - dot / (2 * rr)) * r[i]).epsilon(1e-14));
  }
}

TEST_CASE("Adasum's coefficient stays 1 for a tensor whose squared norm is below 1e-8 as in Horovod", "[collectives]") {
  AdasumCoefficients c = adasumCoefficients({1e-9, 1e-9, 4.0});
  CHECK(c.left == 1.0);
  CHECK(c.right == Approx(1.0 - 1e-9 / 8.0));
}

TEST_CASE("Adasum takes the floating-point types and nothing else", "[collectives]") {
  for (DataType type : kFloats) CHECK(adasumTakes(type));
  for (DataType type : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
                        DataType::kInt64, DataType::kBool}) {
    CHECK_FALSE(adasumTakes(type));
  }
}
