// collectives/ring_schedule.cc: chunk i holds elements/size elements, the first
// elements%size chunks one more, so chunks differ by at most one element.
#include "collectives/ring_schedule.h"

#include <algorithm>

namespace hvd::collectives {

RingSchedule::RingSchedule(int rank, int size, size_t elements) : rank_(rank), size_(size), elements_(elements) {}

Chunk RingSchedule::chunk(int index) const {
  int i = ((index % size_) + size_) % size_;
  size_t base = elements_ / static_cast<size_t>(size_);
  size_t extra = elements_ % static_cast<size_t>(size_);
  size_t ui = static_cast<size_t>(i);
  return {ui * base + std::min(ui, extra), base + (ui < extra ? 1 : 0)};
}

}  // namespace hvd::collectives
