// runtime/common/pause_clock.cc: the merged stretches. A mutex: pauses are noted seldom, and
// pausedSoFar() is read once per submission and stall check, never per byte.
#include "runtime/common/pause_clock.h"

#include <algorithm>
#include <mutex>

namespace hvd {
namespace {

std::mutex mutex;
PauseClockTime lastEnd{};
std::chrono::steady_clock::duration total{};

}  // namespace

void notePause(PauseClockTime from, PauseClockTime to) {
  std::lock_guard<std::mutex> lock(mutex);
  // Stretches are noted about as they end, so only the end of the latest one is kept: a
  // stretch overlapping it counts from there on.
  from = std::max(from, lastEnd);
  if (to <= from) return;
  total += to - from;
  lastEnd = to;
}

void noteLateWake(PauseClockTime start, std::chrono::steady_clock::duration asked) {
  const PauseClockTime now = std::chrono::steady_clock::now();
  if (now - start - asked > kPauseSlack) notePause(start + asked, now);
}

std::chrono::steady_clock::duration pausedSoFar() {
  std::lock_guard<std::mutex> lock(mutex);
  return total;
}

}  // namespace hvd
