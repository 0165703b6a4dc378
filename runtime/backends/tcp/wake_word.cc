// runtime/backends/tcp/wake_word.cc: futex and futex_waitv by syscall (glibc wraps neither).
#include "runtime/backends/tcp/wake_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

namespace hvd::backends::tcp {
namespace {

#ifndef SYS_futex_waitv
constexpr long SYS_futex_waitv = 449;  // the same number on every architecture
#endif

uint32_t* address(std::atomic<uint32_t>* word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  return reinterpret_cast<uint32_t*>(word);
}

timespec relative(std::chrono::microseconds timeout) {
  return {static_cast<time_t>(timeout.count() / 1000000), static_cast<long>(timeout.count() % 1000000) * 1000};
}

// FUTEX_WAIT without FUTEX_PRIVATE_FLAG: the word is shared between processes.
void waitOne(std::atomic<uint32_t>* word, std::chrono::microseconds timeout, uint32_t value = 1) {
  timespec t = relative(timeout);
  ::syscall(SYS_futex, address(word), FUTEX_WAIT, value, &t, nullptr, 0);
}

std::atomic<bool> waitvMissing{false};  // learnt once: ENOSYS on kernels before 5.16

}  // namespace

void sleepWhileAllSet(std::span<std::atomic<uint32_t>* const> words, std::chrono::microseconds timeout) {
  if (words.empty()) return;
  if (words.size() == 1) return waitOne(words[0], timeout);
  if (!waitvMissing.load(std::memory_order_relaxed)) {
    futex_waitv waiters[2] = {};
    for (size_t i = 0; i < 2; ++i) {
      waiters[i].val = 1;
      waiters[i].uaddr = reinterpret_cast<uintptr_t>(address(words[i]));
      waiters[i].flags = FUTEX_32;
    }
    // futex_waitv takes an absolute time on the given clock.
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = static_cast<long long>(now.tv_sec) * 1000000000 + now.tv_nsec + timeout.count() * 1000;
    timespec until{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    if (::syscall(SYS_futex_waitv, waiters, 2u, 0u, &until, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS) return;
    waitvMissing.store(true, std::memory_order_relaxed);
  }
  waitOne(words[0], std::min(timeout, std::chrono::microseconds(1000)));
}

void wakeIfAsleep(std::atomic<uint32_t>& word) {
  if (word.load(std::memory_order_seq_cst) == 0) return;  // ordered after the caller's seq_cst store
  if (word.exchange(0) == 1) ::syscall(SYS_futex, address(&word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void sleepWhileEqual(std::atomic<uint32_t>& word, uint32_t value, std::chrono::microseconds timeout) {
  waitOne(&word, timeout, value);
}

void wakeAll(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, address(&word), FUTEX_WAKE, std::numeric_limits<int>::max(), nullptr, nullptr, 0);
}

}  // namespace hvd::backends::tcp
