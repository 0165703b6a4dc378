// runtime/backends/tcp/wait_policy.cc
#include "runtime/backends/tcp/wait_policy.h"

#include <sched.h>

#include <algorithm>
#include <utility>

namespace hvd::backends::tcp {

WaitPolicy::WaitPolicy(int cores, int localRanks, RunnableCount runnable)
    : localRanks_(localRanks), runnable_(std::move(runnable)) {
  decide(cores);
}

void WaitPolicy::decide(int cores) {
  // Each rank has its own core: spin flat out for 2000 tries, then yielding, for up to 2 ms
  // since the last byte moved (a neighbour copying a few MiB takes about one). Ranks
  // outnumber cores: yield between tries, for 200 us, so the peer being waited for gets the
  // core. Measured at np=4 on 2 cores: 200 yielding tries cut 1 KiB allreduce from 117 to
  // 69 us; over shared memory 50 / 200 / 2000 us of budget gave 1 MiB busbw 2.5 / 4.6 / 2.1
  // GB/s (one run each).
  bool ownCore = localRanks_ <= cores;
  base_.tries = ownCore ? 2000 : 200;
  base_.yield = !ownCore;
  base_.budget = std::chrono::microseconds(ownCore ? 2000 : 200);
  threadSlice_.reset();
  if (!ownCore) threadSlice_ = kSharedCoreSlice;
}

WaitPolicy::Spin WaitPolicy::spinFor(Clock::time_point now, const Spin* cap) {
  // Ranks join the board as they connect, some after this rank's first waits: until all
  // have, the start stands (one relaxed load per wait meanwhile).
  if (!settled_ && board_) {
    if (auto cores = board_->ranksCores(localRanks_)) decide(*cores), settled_ = true;
  }
  constexpr Spin kSleep{0, false, std::chrono::microseconds(0)};
  if (quietAt(now)) return kSleep;
  // A quiet period has ended where ranks share cores: before probing with a spin, which
  // loses a slice if the busy work is still there, look at the host's runnable count. Still
  // more than the ranks awake: another period, longer, without the probe.
  if (!quietLooked_) {
    quietLooked_ = true;
    if (base_.yield && othersRunnable().value_or(false)) {
      ++contendedSpins_;
      startQuiet(now);
      return kSleep;
    }
  }
  Spin spin = base_;
  if (cap) spin.tries = std::min(spin.tries, cap->tries), spin.budget = std::min(spin.budget, cap->budget);
  return spin;
}

bool WaitPolicy::offCore(Clock::time_point now) {
  // Measured at np=4 on 2 cores with nothing else running: taking every lost slice for
  // contention put the job to sleeping waits, and 256 KiB allreduces went from 0.22 to
  // 0.47 ms.
  if (base_.yield && othersRunnable() == false) return false;
  ++contendedSpins_;
  startQuiet(now);
  return true;
}

std::optional<bool> WaitPolicy::othersRunnable() const {
  if (!runnable_) return std::nullopt;
  auto runnable = runnable_();
  if (!runnable) return std::nullopt;
  // This thread is awake, whatever the board says: it has just looked at the clock.
  const int sleeping = board_ ? std::clamp(board_->sleeping(), 0, std::max(localRanks_ - 1, 0)) : 0;
  return *runnable > localRanks_ - sleeping + 1;
}

void WaitPolicy::startQuiet(Clock::time_point now) {
  // Contention found again within kCalm of the last time: it has not gone away, so probe
  // less often (each probe that finds it costs the slice it loses; with the first period
  // after every probe, np=4 beside busy loops kept 5-13x tails over its medians). Found
  // after a calm spell: a new burst, start again from the shortest period.
  if (now - lastOffCore_ < kCalm) quiet_ = std::min(quiet_ * 2, kLongestQuiet);
  else quiet_ = kFirstQuiet;
  lastOffCore_ = now;
  quietUntil_ = now + quiet_;
  quietLooked_ = false;
}

bool SpinLoop::again() {
  ++tries_;
  if (spin_.budget.count() <= 0) return false;
  const bool yielding = spin_.yield || tries_ > spin_.tries;
  if (!yielding && tries_ % 64 != 0) return true;
  Clock::time_point now = Clock::now();
  if (now - lastLook_ >= WaitPolicy::kOffCore) {
    policy_.offCore(now);
    spin_.budget = std::chrono::microseconds(0);
    return false;
  }
  if (tries_ >= spin_.tries && now - start_ >= spin_.budget) return false;
  lastLook_ = now;
  if (yielding) ::sched_yield();
  return true;
}

}  // namespace hvd::backends::tcp
