// runtime/common/pause_clock.cc: the merged stretches. Noting takes a mutex (pauses are
// seldom); reading the total, once per engine submission, is one atomic load.
#include "runtime/common/pause_clock.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace hvd {
namespace {

std::mutex mutex;
PauseClockTime lastEnd{};
std::atomic<std::chrono::steady_clock::rep> total{0};

}  // namespace

void notePause(PauseClockTime from, PauseClockTime to) {
  std::lock_guard<std::mutex> lock(mutex);
  // Stretches are noted about as they end, so only the end of the latest one is kept: a
  // stretch overlapping it counts from there on.
  from = std::max(from, lastEnd);
  if (to <= from) return;
  total.fetch_add((to - from).count(), std::memory_order_relaxed);
  lastEnd = to;
}

void noteLateWake(PauseClockTime start, std::chrono::steady_clock::duration asked) {
  const PauseClockTime now = std::chrono::steady_clock::now();
  if (now - start - asked > kPauseSlack) notePause(start + asked, now);
}

std::chrono::steady_clock::duration pausedSoFar() {
  return std::chrono::steady_clock::duration(total.load(std::memory_order_relaxed));
}

}  // namespace hvd
