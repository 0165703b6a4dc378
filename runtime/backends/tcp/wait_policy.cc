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
  // Each rank has a core, but the scheduler may stack two on one though each could have its
  // own (a load balancer's moment, other work on the other cores): a spin flat out then
  // holds the core the peer needs. So this rank notes where it runs (a relaxed load and,
  // when it has moved, a store) and yields from the first try while another rank of the
  // host last ran here. Two ranks held on one CPU, np=2 over TCP, where 2000 tries flat out
  // take about a millisecond: 64 B to 1 KiB p90 1.1 ms before, 24 us yielding; over shared
  // memory 22 us a call before, 5.3 yielding.
  bool stacked = false;
  if (board_ && localRanks_ > 1 && !base_.yield) {
    board_->ranOn(localRank_, ::sched_getcpu());
    stacked = board_->cpuShared(localRank_, localRanks_).value_or(false);
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
  if (stacked) spin.yield = true;
  if (cap) spin.tries = std::min(spin.tries, cap->tries), spin.budget = std::min(spin.budget, cap->budget);
  return spin;
}

bool WaitPolicy::offCore(Clock::time_point now) {
  // Each rank has a core: the peer it waits for runs on another, so the spin takes time only
  // from the other work on this core, which the scheduler shares out anyway; a rank asleep
  // instead waits for every byte to be woken onto a core that work holds. Measured at np=2
  // beside a busy loop per core: with quiet periods a 64 B allreduce spent whole stretches at
  // 23 us a call (mean 15-18 us), spinning on it took 1.0 (mean 2.0-2.5); 256 KiB 102 and 50
  // us. Ranks the scheduler stacked on one core yield to each other instead (spinFor), which
  // did as well as sleeping there or better (p90 5.4-5.7 us against 6.7-7.7 at 64 B over
  // shared memory). Without a board a rank cannot tell it is stacked, and keeps the periods,
  // as does a fixed spin (localRanks_ 0), which knows nothing of the cores.
  if (!base_.yield && (localRanks_ == 1 || (localRanks_ > 1 && board_))) {
    ++contendedSpins_;
    return false;
  }
  // Measured at np=4 on 2 cores with nothing else running: taking every lost slice for
  // contention put the job to sleeping waits, and 256 KiB allreduces went from 0.22 to
  // 0.47 ms.
  if (base_.yield && othersRunnable() == false) return false;
  ++contendedSpins_;
  startQuiet(now);
  return true;
}

bool WaitPolicy::spunOut(Clock::time_point now) {
  // Measured at np=4 on 2 cores beside a busy loop per core, 1 KiB over shared memory: in 4
  // runs of 6 every tenth call or more took the whole 200 us spin (p90 190-220 us against a
  // 23-25 us median; a 50 us budget moved that mode to 110 us), and with this rule 6 runs of
  // 6 had p90 25 us. A spin runs out with no busy loop either, on an idle host where a
  // neighbour copies a large piece: there others are not runnable, and nothing changes.
  // The count is a read of /proc/loadavg, a few microseconds after 200 us of spinning.
  if (!base_.yield || othersRunnable() != true) return false;
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
  if (tries_ >= spin_.tries && now - start_ >= spin_.budget) {
    policy_.spunOut(now);
    return false;
  }
  lastLook_ = now;
  if (yielding) ::sched_yield();
  return true;
}

}  // namespace hvd::backends::tcp
