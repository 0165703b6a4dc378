// runtime/common/thread_pin.h: one thread of this process held on one CPU, and given back the
// CPUs it had. Only a thread's own mask changes (sched_setaffinity on its thread id), never
// the process's: the user's other threads keep theirs. What a pinned thread starts meanwhile
// inherits its one CPU, as with taskset: threads it creates keep it, and so would processes it
// forks, but a fork() (pthread_atfork) gives the child the mask from before the pin. Processes
// started through vfork or posix_spawn run no fork handlers and start on the one CPU.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <optional>

#include "runtime/common/status.h"

namespace hvd {

class ThreadPin {
 public:
  ThreadPin() = default;
  ThreadPin(const ThreadPin&) = delete;
  ThreadPin& operator=(const ThreadPin&) = delete;
  ~ThreadPin() { release(); }

  // Holds the calling thread on `cpu`, which its mask must include (kInvalidArgument if not).
  // A thread this pin held before gets its mask back first. Nothing is called when the
  // calling thread is held on `cpu` already.
  Status pinCaller(int cpu);
  // Gives the held thread its mask back, unless its CPUs were changed meanwhile by someone
  // else (a thread that has exited meanwhile is let go).
  void release();
  // The CPU the pin holds a thread on, if it holds one.
  std::optional<int> cpu() const;

 private:
  pid_t tid_ = 0;  // the held thread; 0: none
  pid_t pid_ = 0;  // the process that pinned it
  int cpu_ = -1;
  cpu_set_t saved_{};
};

}  // namespace hvd
