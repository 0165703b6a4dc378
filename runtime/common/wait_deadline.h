// runtime/common/wait_deadline.h: when a wait for a peer gives up. A timeout (HVD_TIMEOUT)
// measures how long nothing has arrived, not how long a call takes: a huge tensor over a slow
// link may take minutes while its bytes never stop coming, and "no data from rank 1 within
// 30 s" must then not be said.
//
// Nor does time this process did not run count. A job stopped as a whole (Ctrl-Z on hvdrun,
// SIGSTOP, every rank held in a debugger, a suspended VM) and continued after longer than
// the timeout would otherwise fail at once: a rank waiting for a peer that was still computing
// when the job stopped finds its deadline gone before the peer has had a moment to send.
// Such a pause shows as a gap between two looks at the clock much longer than the sleep
// between them asked for; the deadline moves on by the gap. Sleeps in a wait therefore ask
// for at most kLongestSleep, or a pause inside one long sleep would hide in it.
#pragma once

#include <algorithm>
#include <chrono>

#include "runtime/common/pause_clock.h"

namespace hvd {

class WaitDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kLongestSleep{1000};

  WaitDeadline(Clock::duration timeout, Clock::time_point now) : timeout_(timeout) { restart(now); }

  // Something arrived (or went out) at `now`: the wait starts over.
  void restart(Clock::time_point now) {
    at_ = now + timeout_;
    last_ = now;
    asked_ = Clock::duration::zero();
  }
  // At a look at the clock while nothing moves: whether the wait has lasted its timeout of
  // the time this process ran.
  bool passed(Clock::time_point now) {
    const Clock::duration over = now - last_ - asked_;
    if (over > kPauseSlack) {  // pause_clock.h: the peers are not late for it
      at_ += over;
      notePause(now - over, now);
    }
    last_ = now;
    asked_ = Clock::duration::zero();
    return now >= at_;
  }
  // Before a sleep: how long it may ask for (to the deadline, at most kLongestSleep), noted
  // as the sleep the next look allows for.
  std::chrono::milliseconds sleepFor(Clock::time_point now) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - now);
    auto ms = std::clamp(left, std::chrono::milliseconds(0), kLongestSleep);
    asked_ = ms;
    return ms;
  }
  // A sleep of its own length (a futex slice) before the next look.
  void sleeping(Clock::duration asked) { asked_ = asked; }

 private:
  Clock::duration timeout_;
  Clock::time_point at_, last_;
  Clock::duration asked_{};
};

}  // namespace hvd
