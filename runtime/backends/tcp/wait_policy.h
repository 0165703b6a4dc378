// runtime/backends/tcp/wait_policy.h: how a rank waits for its peers' bytes: spin (the
// answer comes within microseconds and a sleep would cost a scheduler wake-up, ~10 us here)
// or sleep at once. Spinning pays only while this rank's spinning takes a core nobody else
// wants. With other work on the machine (data loaders, the framework's threads, another job)
// a spinning rank burns the time slice its peer needs: measured on 2 cores with a busy loop
// per core, np=4, a 4-byte allreduce took 500 us with the old fixed spin and 35 us sleeping
// at once; 4 MiB 11.3 ms and 6.8 ms.
//
// So the start (spin or not) comes from the cores the process can have (affinity and cgroup
// quota, cpu_budget.h) against the ranks on this host, and, once the host's ranks have all
// put their CPUs on the host board, from the cores they have together (ranks bound to a
// core each see one apiece); and then, where ranks share cores, from what the spins see: a
// spin during which the thread was off its core for a whole time slice (kOffCore without
// running) shows the core is contended, and waits sleep at once for a while (the quiet
// period, doubling while it keeps happening, back to the first length after a calm spell).
// Ranks that each have a core keep spinning through such slices (offCore says why).
//
// Where ranks outnumber cores, the job's waiting threads also ask for a short time slice
// (kSharedCoreSlice, thread_slice.h): a rank woken by its peer's bytes is then put back on
// a core ahead of work with the kernel's longer slice, instead of after it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "runtime/backends/tcp/host_board.h"

namespace hvd::backends::tcp {

class WaitPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  // A wait's spin before it sleeps.
  struct Spin {
    int tries = 0;           // attempts before the budget's clock counts
    bool yield = false;      // sched_yield between attempts (ranks outnumber cores)
    std::chrono::microseconds budget{0};  // 0: sleep at once
  };

  // A gap this long between two looks at the clock in one spin means the thread did not run
  // for it: the scheduler gave its core to something else for a slice (EEVDF's base slice is
  // 0.75 ms and up); an interrupt or a peer's short turn after a yield takes far less.
  static constexpr std::chrono::microseconds kOffCore{200};
  static constexpr std::chrono::milliseconds kFirstQuiet{20};
  static constexpr std::chrono::milliseconds kLongestQuiet{640};
  static constexpr std::chrono::seconds kCalm{2};

  // The slice a thread that waits in a collective asks for where ranks outnumber cores.
  // Measured at np=4 on 2 cores beside 2 busy loops (docs/benchmarks.md, 2026-11-24).
  static constexpr std::chrono::microseconds kSharedCoreSlice{100};

  // Tasks runnable on the host now (runnableTasks() in cpu_budget.h; tests give their own).
  using RunnableCount = std::function<std::optional<int>()>;

  // `cores`: what this process can have (usableCores()); `localRanks`: the job's ranks on
  // this host, each a process that spins while it waits.
  WaitPolicy(int cores, int localRanks, RunnableCount runnable);
  // A fixed spin (tests, and transports opened without a host's view).
  explicit WaitPolicy(Spin fixed) : base_(fixed) {}

  // The spin for a wait that begins at `now`, within `cap`'s tries and budget when there is
  // one: none in a quiet period. Where ranks share cores, the first wait after a quiet
  // period looks at the host's runnable count (offCore's rule) and, while others still run,
  // starts another period instead of probing with a spin that would lose a slice. The first
  // wait that finds every local rank on the board decides the base spin and slice again
  // from the cores they have together. Where each rank has a core, a wait while another
  // rank of the host last ran on this thread's CPU yields from its first try.
  Spin spinFor(Clock::time_point now, const Spin* cap = nullptr);
  // The spinning thread found itself off its core for a slice at `now`. Where ranks share
  // cores (and for a fixed spin): sleep at once until the quiet period ends; one that comes
  // within kCalm of the last doubles the period. Where each rank has a core it is only
  // counted: the peer runs elsewhere, and the spin costs just the other work's share (ranks
  // stacked on one core yield to each other, spinFor); without a board, which would tell
  // stacked ranks, as where they share.
  // Where ranks outnumber cores, a yielding spin gives its core to a peer rank, which may
  // keep it as long (reducing a large piece): that counts only when more tasks are runnable
  // on the host than this job's ranks that are awake (all of them, less the board's
  // sleepers when there is a board), and one more (a rank just woken, an engine thread,
  // hvdrun). Returns whether it counted.
  bool offCore(Clock::time_point now);
  // A yielding spin ran its whole budget with nothing arriving, at `now`. Where ranks
  // outnumber cores and more is runnable than the job's ranks awake (offCore's count), its
  // yields went to that other work, or straight back to this thread, instead of to the peer
  // it waits for, which then runs only once this rank sleeps: a quiet period, as offCore's.
  // Without the others (a peer's long copy on an idle host) the next wait spins again, and
  // where each rank has a core the spin is the other work's time, as in offCore. Returns
  // whether it counted.
  bool spunOut(Clock::time_point now);
  // The host's board (host_board.h), which this policy's copies share, and this rank's seat
  // on it: waits count their sleeps on it (asleep(), awake()), offCore takes its sleepers off
  // the awake ranks, and spinFor its ranks' cores; where each rank has a core, spinFor notes
  // the CPU this thread runs on, and yields from the first try while another rank ran there.
  void shareBoard(std::shared_ptr<HostBoard> board, int localRank) {
    board_ = std::move(board);
    localRank_ = localRank;
    settled_ = localRanks_ == 0;  // a fixed spin stays as given
  }
  void asleep() const {
    if (board_) board_->asleep();
  }
  void awake() const {
    if (board_) board_->awake();
  }
  // The slice (thread_slice.h) a thread asks for before it waits: kSharedCoreSlice where
  // ranks outnumber cores, nullopt (the kernel's default) where each has one. It may change
  // once (spinFor), so waits ask for the default back rather than nothing.
  std::optional<std::chrono::microseconds> threadSlice() const { return threadSlice_; }

  bool quietAt(Clock::time_point now) const { return now < quietUntil_; }
  // Contention found at least kPinAfter times running (each within kCalm of the last, so the
  // quiet period has doubled that often), the last within kCalm of `now`: not a start-up's
  // burst (an idle np=4 job on 2 cores finds it up to 3 times as its ranks start) but work
  // that stays. Only where ranks outnumber the cores (only there do the periods run).
  bool contentionPersists(Clock::time_point now) const {
    return base_.yield && now - lastOffCore_ < kCalm && quiet_ >= kFirstQuiet * (1 << (kPinAfter - 1));
  }
  static constexpr int kPinAfter = 5;
  const Spin& base() const { return base_; }
  // How many times contention was found: a spin off its core, or a quiet period renewed
  // (for tests and reports).
  long contendedSpins() const { return contendedSpins_; }

 private:
  // The base spin and slice for `cores` shared by localRanks_.
  void decide(int cores);
  // More tasks runnable on the host than the job's ranks awake, and one more (offCore);
  // nullopt without a count.
  std::optional<bool> othersRunnable() const;
  // A quiet period from `now`: kFirstQuiet, or twice the last within kCalm of it.
  void startQuiet(Clock::time_point now);

  Spin base_;
  bool settled_ = true;  // false while a board may still tell the ranks' cores
  std::optional<std::chrono::microseconds> threadSlice_;
  int localRanks_ = 0;
  int localRank_ = 0;
  RunnableCount runnable_;
  std::shared_ptr<HostBoard> board_;
  Clock::time_point quietUntil_{}, lastOffCore_{};
  std::chrono::milliseconds quiet_{kFirstQuiet};
  bool quietLooked_ = true;  // the end of the last quiet period has been looked at
  long contendedSpins_ = 0;
};

// One wait's spin as a loop's step, for every loop that waits (the exchange loop, waits on
// shared words): tries flat out, then yielding (at once where ranks share cores), until the
// tries and the budget are both spent; a gap of kOffCore between two looks at the clock tells
// the policy (offCore) and ends the spin. The clock is looked at every 64 plain tries and
// after every yield.
class SpinLoop {
 public:
  using Clock = WaitPolicy::Clock;
  SpinLoop(WaitPolicy& policy, WaitPolicy::Spin spin, Clock::time_point start)
      : policy_(policy), spin_(spin), start_(start), lastLook_(start) {}
  // After a try that found nothing: true to try again (having yielded where it should),
  // false to sleep.
  bool again();
  Clock::time_point start() const { return start_; }

 private:
  WaitPolicy& policy_;
  WaitPolicy::Spin spin_;
  Clock::time_point start_, lastLook_;
  int tries_ = 0;
};

}  // namespace hvd::backends::tcp
