// collectives/halving_schedule.cc: the ranges, computed once by walking the steps.
#include "collectives/halving_schedule.h"

namespace hvd::collectives {

bool isPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

HalvingSchedule::HalvingSchedule(int rank, int size, size_t elements) : rank_(rank) {
  size_t lo = 0, hi = elements;
  for (int step = 0; (1 << step) < size; ++step) {
    size_t mid = lo + (hi - lo) / 2;
    Chunk lower{lo, mid - lo}, upper{mid, hi - mid};
    bool low = keepsLowerHalf(step);
    kept_.push_back(low ? lower : upper);
    given_.push_back(low ? upper : lower);
    lo = kept_.back().offset, hi = lo + kept_.back().count;
  }
}

}  // namespace hvd::collectives
