// runtime/backends/tcp/wake_word.h: sleeping on a 32-bit word in shared memory until
// another process changes it (Linux futexes, not the private kind, since the word lives
// in a mapping two processes share), for ranks that wait on a neighbour through shared
// memory without burning the core their neighbour may need.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>

namespace hvd::backends::tcp {

// Sleeps while every word still holds 1, for at most `timeout`; returns early when one is
// changed and woken, on a signal, or when one is no longer 1 already. Up to two words
// (futex_waitv, Linux 5.16); where the kernel lacks it, waits on the first word only, with
// the timeout capped at a millisecond, so a change to the other is seen soon enough.
void sleepWhileAllSet(std::span<std::atomic<uint32_t>* const> words, std::chrono::microseconds timeout);

// Wakes the process sleeping on `word` if it said it would sleep (word == 1), clearing it.
void wakeIfAsleep(std::atomic<uint32_t>& word);

// A word to sleep on while it holds `value` (sleepWhileEqual).
struct SleepOn {
  std::atomic<uint32_t>* word;
  uint32_t value;
};

// Sleeps while `word` holds `value`, for at most `timeout`; returns early when it is
// changed and woken (wakeAll), on a signal, or when it holds something else already.
void sleepWhileEqual(std::atomic<uint32_t>& word, uint32_t value, std::chrono::microseconds timeout);
// Wakes every process sleeping on `word` (sleepWhileEqual), with one system call.
void wakeAll(std::atomic<uint32_t>& word);

}  // namespace hvd::backends::tcp
