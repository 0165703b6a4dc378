// runtime/common/thread_slice.cc: sched_getattr and sched_setattr, through syscall(): the
// C library wraps them only from glibc 2.41, and <linux/sched/types.h> clashes with
// <sched.h> over struct sched_param.
#include "runtime/common/thread_slice.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace hvd {
namespace {

// struct sched_attr as of its first version (SCHED_ATTR_SIZE_VER0, 48 bytes): a newer
// kernel takes it and reports into it the fields it has room for.
struct SchedAttr {
  uint32_t size = sizeof(SchedAttr);
  uint32_t policy = 0;
  uint64_t flags = 0;
  int32_t nice = 0;
  uint32_t priority = 0;
  uint64_t runtime = 0;  // for the fair policies: the slice, in ns
  uint64_t deadline = 0;
  uint64_t period = 0;
};
static_assert(sizeof(SchedAttr) == 48);

constexpr uint32_t kSchedOther = 0, kSchedBatch = 3, kSchedIdle = 5;  // the fair policies
constexpr uint64_t kResetOnFork = 0x01;                               // SCHED_FLAG_RESET_ON_FORK

bool fair(uint32_t policy) { return policy == kSchedOther || policy == kSchedBatch || policy == kSchedIdle; }

Result<SchedAttr> currentAttr() {
  SchedAttr attr;
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return systemError("sched_getattr");
  return attr;
}

thread_local std::chrono::microseconds lastAsked{0};

}  // namespace

std::optional<std::chrono::microseconds> threadSlice() {
  auto attr = currentAttr();
  if (!attr || !fair(attr->policy) || attr->runtime == 0) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::nanoseconds(attr->runtime));
}

Status requestThreadSlice(std::chrono::microseconds slice) {
  if (slice == lastAsked) return Status::ok();
  lastAsked = slice;  // asked once, whatever the answer: a refusal stays one, no need to hear it per wait
  auto attr = currentAttr();
  if (!attr) return attr.status();
  if (!fair(attr->policy)) return Status::ok();
  // Everything else as the kernel reported it: sched_setattr sets policy and nice too, and a
  // nice value this call raised back to 0 would be a privilege (or EPERM) the caller never
  // asked for.
  attr->size = sizeof(SchedAttr);
  attr->flags &= kResetOnFork;
  // A short slice stays this thread's: with the reset on fork, the threads and processes it
  // starts (a data loader's workers, a framework's threads) begin with the kernel's slice,
  // not one that puts them on a core ahead of the ranks' waits. The reset also gives them
  // nice 0 where this thread's is negative: there they inherit the slice, as before, rather
  // than lose a priority someone chose. Never cleared: a thread without CAP_SYS_NICE may not.
  if (slice.count() > 0 && attr->nice >= 0) attr->flags |= kResetOnFork;
  attr->runtime = static_cast<uint64_t>(std::chrono::nanoseconds(slice).count());
  if (::syscall(SYS_sched_setattr, 0, &*attr, 0) != 0) return systemError("sched_setattr");
  return Status::ok();
}

}  // namespace hvd
