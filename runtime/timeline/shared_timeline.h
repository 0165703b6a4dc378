// runtime/timeline/shared_timeline.h: a rank's timeline as its process sets' engines see it.
// The job's engine publishes the writer it opens or closes (HOROVOD_TIMELINE,
// start_timeline, stop_timeline); each set's engine takes it up at its next cycle, so the
// set's collectives land in the rank's one trace, on tracks of their own. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "runtime/timeline/timeline_writer.h"

namespace hvd::timeline {

class SharedTimeline {
 public:
  struct View {
    std::shared_ptr<TimelineWriter> writer;  // null: no timeline now
    bool markCycles = false;
    std::uint64_t generation = 0;            // grows at every publish
  };
  void publish(std::shared_ptr<TimelineWriter> writer, bool markCycles);
  // The generation alone: a follower's per-cycle check, without the lock.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  View current() const;

 private:
  mutable std::mutex mutex_;
  View view_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace hvd::timeline
