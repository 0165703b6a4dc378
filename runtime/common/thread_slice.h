// runtime/common/thread_slice.h: the time slice the kernel's fair scheduler gives the calling
// thread. Since Linux 6.12 (EEVDF) a thread may ask for its own slice (sched_setattr's
// sched_runtime, clamped by the kernel to 0.1-100 ms; the default is 0.7 ms times
// 1 + log2(CPUs), at most 2.8 ms: 1.4 ms on this 2-CPU machine). A shorter slice gives the
// thread an earlier deadline, so on waking it is put on a core ahead of threads with longer
// ones, and once running it hands the core back sooner; its share of the CPU (its weight,
// from nice) stays the same. Kernels before 6.12 keep no slice per thread (threadSlice()
// says so); a request there was not tried on one, and its failure is not an error anyone
// needs to see (callers may ignore the Status).
#pragma once

#include <chrono>
#include <optional>

#include "runtime/common/status.h"

namespace hvd {

// The calling thread's slice as the kernel reports it; nullopt where the kernel keeps none
// per thread (it reports 0 before 6.12) or the thread is not under the fair scheduler.
std::optional<std::chrono::microseconds> threadSlice();

// Asks for `slice` for the calling thread (0: the kernel's default back), keeping its policy
// and nice value. Threads and processes it starts later begin with the kernel's default
// slice (a short one sets SCHED_FLAG_RESET_ON_FORK, which stays), except where its nice
// value is negative: there they inherit the slice, and the nice value. A thread under a
// real-time policy is left as it is. Asking again for the slice this thread last asked for
// makes no system call, so waits may ask each time they begin.
Status requestThreadSlice(std::chrono::microseconds slice);

}  // namespace hvd
