// collectives/adasum_combine.cc: plain loops over element accessors; float16 and bfloat16
// go through float, everything accumulates in double.
#include "collectives/adasum_combine.h"

#include <cstdint>
#include <cstring>

namespace hvd::collectives {
namespace {

// Reads and writes element i of a buffer of `type` as a double.
struct Float32 {
  using Storage = float;
  static double load(Storage v) { return v; }
  static Storage store(double v) { return static_cast<float>(v); }
};
struct Float64 {
  using Storage = double;
  static double load(Storage v) { return v; }
  static Storage store(double v) { return v; }
};
struct Float16 {
  using Storage = std::uint16_t;
  static double load(Storage v) { return halfToFloat(v); }
  static Storage store(double v) { return floatToHalf(static_cast<float>(v)); }
};
struct BFloat16 {
  using Storage = std::uint16_t;
  static double load(Storage v) { return bfloat16ToFloat(v); }
  static Storage store(double v) { return floatToBfloat16(static_cast<float>(v)); }
};

// Eight partial sums of each term, added up at the end: one running sum waits a whole
// floating-point addition per element, eight independent ones fill the pipeline and
// vectorise without the compiler reordering any sum (the order is this code's, so a slice
// always gives the same bits).
template <typename E>
AdasumTerms termsOf(const void* left, const void* right, size_t count) {
  constexpr size_t kLanes = 8;
  const auto* l = static_cast<const typename E::Storage*>(left);
  const auto* r = static_cast<const typename E::Storage*>(right);
  double dot[kLanes] = {}, ll[kLanes] = {}, rr[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const double a = E::load(l[i + k]), b = E::load(r[i + k]);
      dot[k] += a * b;
      ll[k] += a * a;
      rr[k] += b * b;
    }
  }
  AdasumTerms t;
  for (size_t k = 0; k < kLanes; ++k) t.dot += dot[k], t.leftNormSq += ll[k], t.rightNormSq += rr[k];
  for (; i < count; ++i) {
    const double a = E::load(l[i]), b = E::load(r[i]);
    t.dot += a * b;
    t.leftNormSq += a * a;
    t.rightNormSq += b * b;
  }
  return t;
}

template <typename E>
void applyTo(void* target, const void* other, size_t count, double targetCoefficient, double otherCoefficient) {
  auto* x = static_cast<typename E::Storage*>(target);
  const auto* y = static_cast<const typename E::Storage*>(other);
  for (size_t i = 0; i < count; ++i) {
    x[i] = E::store(targetCoefficient * E::load(x[i]) + otherCoefficient * E::load(y[i]));
  }
}

}  // namespace

bool adasumTakes(DataType type) { return isFloatingPoint(type); }

AdasumTerms adasumTerms(const void* left, const void* right, size_t count, DataType type) {
  switch (type) {
    case DataType::kFloat32: return termsOf<Float32>(left, right, count);
    case DataType::kFloat64: return termsOf<Float64>(left, right, count);
    case DataType::kFloat16: return termsOf<Float16>(left, right, count);
    case DataType::kBFloat16: return termsOf<BFloat16>(left, right, count);
    default: return {};  // never asked: callers check adasumTakes
  }
}

AdasumCoefficients adasumCoefficients(const AdasumTerms& whole) {
  // Horovod's threshold: below it a tensor counts as zero and its coefficient stays 1 (the
  // comparison is also false for a NaN norm, which then shows in the result anyway).
  constexpr double kTiny = 1e-8;
  AdasumCoefficients c;
  if (whole.leftNormSq >= kTiny) c.left = 1.0 - whole.dot / (2.0 * whole.leftNormSq);
  if (whole.rightNormSq >= kTiny) c.right = 1.0 - whole.dot / (2.0 * whole.rightNormSq);
  return c;
}

void adasumApply(void* target, const void* other, size_t count, DataType type, AdasumCoefficients c,
                 bool targetIsLeft) {
  const double mine = targetIsLeft ? c.left : c.right, theirs = targetIsLeft ? c.right : c.left;
  switch (type) {
    case DataType::kFloat32: return applyTo<Float32>(target, other, count, mine, theirs);
    case DataType::kFloat64: return applyTo<Float64>(target, other, count, mine, theirs);
    case DataType::kFloat16: return applyTo<Float16>(target, other, count, mine, theirs);
    case DataType::kBFloat16: return applyTo<BFloat16>(target, other, count, mine, theirs);
    default: return;
  }
}

}  // namespace hvd::collectives
