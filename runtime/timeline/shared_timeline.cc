// runtime/timeline/shared_timeline.cc
#include "runtime/timeline/shared_timeline.h"

namespace hvd::timeline {

void SharedTimeline::publish(std::shared_ptr<TimelineWriter> writer, bool markCycles) {
  std::lock_guard<std::mutex> lock(mutex_);
  view_.writer = std::move(writer);
  view_.markCycles = markCycles;
  view_.generation += 1;
  generation_.store(view_.generation, std::memory_order_release);
}

SharedTimeline::View SharedTimeline::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return view_;
}

}  // namespace hvd::timeline
