// runtime/common/pause_clock.h: how long this process has been found not running (stopped by
// SIGSTOP, Ctrl-Z on hvdrun, a debugger, `scontrol suspend` or gang scheduling), summed since
// it started. Whatever ages a wait in wall-clock time (the stall inspector's "waited 40 s for
// rank 0") takes off what was paused since the wait began: a job held as a whole for a
// minute has not stalled for a minute.
//
// A pause is noted by the code that notices it, a gap between two looks at the clock far
// longer than the sleep between them asked for (WaitDeadline, the engine's cycle sleep).
// Several threads may notice the same pause: the noted stretches are merged, so it counts
// once.
#pragma once

#include <chrono>
#include <type_traits>
#include <utility>

namespace hvd {

using PauseClockTime = std::chrono::steady_clock::time_point;

// A look at the clock this much later than the sleep before it asked for was a pause. A
// process runnable but not run for a second beside other work is as good as stopped too.
inline constexpr std::chrono::milliseconds kPauseSlack{1000};

// The process did not run from `from` to `to` (steady_clock).
void notePause(PauseClockTime from, PauseClockTime to);
// After a sleep that began at `start` and asked for `asked`: a wake-up more than kPauseSlack
// late is noted as a pause. Around the sleeps where a stopped process most likely sits
// (a collective's waits, the engine's cycle waits): after the wake-up the bytes may already
// be there, and nothing else would look at the clock.
void noteLateWake(PauseClockTime start, std::chrono::steady_clock::duration asked);
// sleep(), which asks to sleep at most `asked`, with noteLateWake around it; its result.
template <typename Sleep>
auto sleepNoticingPause(std::chrono::steady_clock::duration asked, Sleep&& sleep) {
  const PauseClockTime start = std::chrono::steady_clock::now();
  if constexpr (std::is_void_v<std::invoke_result_t<Sleep>>) {
    std::forward<Sleep>(sleep)();
    noteLateWake(start, asked);
  } else {
    auto result = std::forward<Sleep>(sleep)();
    noteLateWake(start, asked);
    return result;
  }
}
// The pauses noted so far, together.
std::chrono::steady_clock::duration pausedSoFar();

}  // namespace hvd
