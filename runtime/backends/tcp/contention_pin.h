// runtime/backends/tcp/contention_pin.h: where a host's ranks outnumber its cores and other
// work keeps finding them busy, the thread that runs a rank's collectives is held on one CPU
// (local rank mod the CPUs the process may use, so the host's ranks share them evenly) until
// the contention has gone (the wait policy's kCalm without it).
//
// Why: left to itself the scheduler sometimes stacks three or four of the ranks on one core
// beside a busy loop, and keeps them there for a whole run: np=4 on 2 cores at 256 KiB over
// shared memory, 3 runs of 8 had p90 0.6-2.3 ms against 120-250 us medians, and ranks bound
// from the start (--bind-to core:overload-allowed) had none. Binding whole ranks by default
// hung TensorFlow's parameter-server worker (its inter-op pool sized from one CPU), and pinning
// the calling thread for each call alone cost 27% idle at 256 KiB (a move to that CPU per
// call). So only the collective thread is held, only while contention lasts: idle, nothing is
// pinned (docs/benchmarks.md, busy cores).
#pragma once

#include <optional>
#include <vector>

#include "runtime/backends/tcp/wait_policy.h"
#include "runtime/common/thread_pin.h"

namespace hvd::backends::tcp {

class ContentionPin {
 public:
  // `cpus`: those the process may use (affinityCpus()); `enabled`: HVD_CONTENTION_PIN.
  ContentionPin(std::vector<int> cpus, int localRank, bool enabled);

  // Before a data collective, on the thread that runs it: holds that thread on its CPU while
  // `policy` finds contention persisting (contentionPersists), gives it its CPUs back once
  // it does not. One CPU to use, or a pin refused (the thread's own mask was narrowed since),
  // and nothing is pinned again.
  void beforeCall(const WaitPolicy& policy, WaitPolicy::Clock::time_point now);
  // The CPU the collective thread is held on now, if it is.
  std::optional<int> pinnedCpu() const { return pin_.cpu(); }

 private:
  std::vector<int> cpus_;
  int localRank_;
  bool enabled_;
  ThreadPin pin_;
};

}  // namespace hvd::backends::tcp
