// collectives/fold_schedule.cc: the largest power of two and the ranks beyond it.
#include "collectives/fold_schedule.h"

namespace hvd::collectives {

FoldSchedule::FoldSchedule(int rank, int size) : rank_(rank), active_(1), extra_(0) {
  while (active_ * 2 <= size) active_ *= 2;
  extra_ = size - active_;
}

}  // namespace hvd::collectives
