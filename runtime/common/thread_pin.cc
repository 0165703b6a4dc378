// runtime/common/thread_pin.cc
#include "runtime/common/thread_pin.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

namespace hvd {
namespace {

// Every thread a pin holds now, with its mask from before, for the fork handlers: a child's
// only thread has a new id, so the forking thread looks itself up before the fork and the
// child applies what it found.
struct Held {
  pid_t tid;
  cpu_set_t saved;
};
std::mutex heldMutex;
std::vector<Held> held;  // under heldMutex
thread_local std::optional<cpu_set_t> forkingSaved;

// The list's lock is held across the fork, so the child never starts with it taken by a
// thread it does not have.
void beforeFork() {
  heldMutex.lock();
  forkingSaved.reset();
  const pid_t self = ::gettid();
  for (const Held& h : held) {
    if (h.tid == self) forkingSaved = h.saved;
  }
}

void inChild() {
  if (forkingSaved) ::sched_setaffinity(0, sizeof(cpu_set_t), &*forkingSaved);
  forkingSaved.reset();
  held.clear();  // the child holds none of its parent's threads
  heldMutex.unlock();
}

void inParent() {
  forkingSaved.reset();
  heldMutex.unlock();
}

void remember(pid_t tid, const cpu_set_t& saved) {
  static std::once_flag handlers;
  std::call_once(handlers, [] { ::pthread_atfork(beforeFork, inParent, inChild); });
  std::lock_guard lock(heldMutex);
  held.push_back({tid, saved});
}

void forget(pid_t tid) {
  std::lock_guard lock(heldMutex);
  std::erase_if(held, [&](const Held& h) { return h.tid == tid; });
}

}  // namespace

Status ThreadPin::pinCaller(int cpu) {
  const pid_t self = ::gettid();
  if (tid_ == self && cpu_ == cpu) return Status::ok();
  release();
  cpu_set_t saved;
  CPU_ZERO(&saved);
  if (::sched_getaffinity(0, sizeof saved, &saved) != 0) return systemError("sched_getaffinity");
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &saved)) {
    return invalidArgument("CPU " + std::to_string(cpu) + " is not one this thread may run on");
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  // Remembered first: a fork between the two calls would otherwise leave its child on one CPU.
  remember(self, saved);
  if (::sched_setaffinity(0, sizeof one, &one) != 0) {
    Status failed = systemError("sched_setaffinity");
    forget(self);
    return failed;
  }
  tid_ = self;
  pid_ = ::getpid();
  cpu_ = cpu;
  saved_ = saved;
  return Status::ok();
}

void ThreadPin::release() {
  if (tid_ == 0) return;
  // A forked child's copy of the pin names its parent's thread, which it leaves alone.
  if (::getpid() != pid_) {
    tid_ = 0;
    return;
  }
  // Only a thread still on the one CPU this pin gave it: a program that moved the thread
  // itself meanwhile keeps its choice. ESRCH: the thread has exited, and its mask with it. A
  // thread id the kernel has given to a new thread meanwhile would get the old one's CPUs;
  // ids are recycled only after the whole range (pid_max) has been used.
  cpu_set_t now;
  CPU_ZERO(&now);
  if (::sched_getaffinity(tid_, sizeof now, &now) == 0 && CPU_COUNT(&now) == 1 && CPU_ISSET(cpu_, &now)) {
    (void)::sched_setaffinity(tid_, sizeof saved_, &saved_);
  }
  forget(tid_);
  tid_ = 0;
  cpu_ = -1;
}

std::optional<int> ThreadPin::cpu() const {
  if (tid_ == 0) return std::nullopt;
  return cpu_;
}

}  // namespace hvd
