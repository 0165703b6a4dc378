// collectives/adasum_combine.h: the arithmetic of Adasum (Horovod's hvd.Adasum, from
// "Adaptive Summation", Maleki et al.) on two tensors, left and right:
//   result = (1 - l.r / (2 |l|^2)) l + (1 - l.r / (2 |r|^2)) r
// Orthogonal tensors add up; equal ones give the tensor itself (an average); a zero tensor
// leaves the other as it is. Where a squared norm is below 1e-8 its coefficient is 1, as
// in Horovod. Split out of the algorithm (adasum.h) so that the terms of a slice can be
// summed over ranks first: the coefficients need the whole tensors' dot and norms.
// Sums in double; float16 and bfloat16 are computed through float.
#pragma once

#include <cstddef>

#include "collectives/reduce.h"

namespace hvd::collectives {

// The types Adasum combines: float16, bfloat16, float32 and float64.
bool adasumTakes(DataType type);

// A dot product and the two squared norms: of whole tensors, or of slices to be summed.
struct AdasumTerms {
  double dot = 0;
  double leftNormSq = 0;
  double rightNormSq = 0;
};

// The terms of left[0, count) and right[0, count).
AdasumTerms adasumTerms(const void* left, const void* right, size_t count, DataType type);

struct AdasumCoefficients {
  double left = 1;
  double right = 1;
};
// The coefficients from the whole tensors' terms.
AdasumCoefficients adasumCoefficients(const AdasumTerms& whole);

// target[i] = c.left * left[i] + c.right * right[i] for i < count, where target holds the
// left operand (targetIsLeft) or the right one and `other` the remaining one. The result
// is rounded to `type` once.
void adasumApply(void* target, const void* other, size_t count, DataType type, AdasumCoefficients c,
                 bool targetIsLeft);

}  // namespace hvd::collectives
