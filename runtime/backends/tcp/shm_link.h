// runtime/backends/tcp/shm_link.h: one direction of a ring link through shared memory, for
// neighbours on the same host: a byte ring buffer in a POSIX shared-memory object. The
// reading rank creates it (its inbox) and the writing rank maps it: an unnamed memfd through
// the reader's /proc/<pid>/fd, or, where that is not possible, a /dev/shm name unlinked as
// soon as both have it mapped (a rank killed before that leaves the name behind).
// One writer and one reader, each a single thread; neither call blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "runtime/backends/tcp/fd_handle.h"
#include "runtime/common/status.h"

namespace hvd::backends::tcp {

class ShmLink {
 public:
  // The default. Small on purpose: the buffer's bytes go round it, so each link keeps
  // capacity bytes hot in cache. Measured at np=4 on 2 cores (medians of 5): 1 MiB
  // allreduce busbw 2.1 GB/s with 4 MiB buffers (48 MiB of them in all, past the 32 MiB L3),
  // 6.2 with 1 MiB, 4.1 with 256 KiB (more waits for room).
  static constexpr size_t kCapacity = size_t{1} << 20;

  // Creates and maps a new object of `capacity` data bytes (fails if the name exists): the
  // reader's side.
  static Result<ShmLink> create(const std::string& name, size_t capacity = kCapacity);
  // Maps an existing object, whatever its capacity: the writer's side. kNotFound when it is
  // not on this host.
  static Result<ShmLink> open(const std::string& name);
  static void unlink(const std::string& name);
  // The same without a name (memfd_create), so that nothing of it can outlive the processes
  // that map it, however they die. The writer maps it by `handle` ("fd:<pid>:<fd>:<dev>:<ino>",
  // opened through /proc/<pid>/fd/<fd>), which stays valid while *keepOpen (a descriptor the
  // caller closes once the writer has answered) is open. kNotFound where the kernel has no
  // memfd_create; kUnavailable, as for create(), when memory has no room.
  static Result<ShmLink> createUnnamed(size_t capacity, int* keepOpen, std::string* handle);
  static bool isHandle(const std::string& offer) { return isFdHandle(offer); }
  // Maps an unnamed inbox by its handle. kNotFound when that process's descriptor cannot be
  // opened or is another file (another host, another pid namespace, a non-dumpable process).
  static Result<ShmLink> openHandle(const std::string& handle);

  ShmLink(ShmLink&& other) noexcept;
  ShmLink& operator=(ShmLink&& other) noexcept;
  ShmLink(const ShmLink&) = delete;
  ShmLink& operator=(const ShmLink&) = delete;
  ~ShmLink();

  size_t capacity() const { return capacity_; }

  // Each call moves at most this much and then publishes it, so that the other side copies
  // at the same time: a reader that copied all of a full 1 MiB buffer before freeing any
  // of it left the writer idle meanwhile, and the other way round (np=2 broadcast of
  // 1 MiB, medians of 5: 11.0 GB/s whole, 31.9 in 64 KiB moves; 27.0 in 256 KiB ones).
  static constexpr size_t kMaxMove = 64 * 1024;

  // Copies as much as fits (writer) or as much as has arrived (reader), up to kMaxMove;
  // returns the bytes moved.
  size_t write(const std::byte* data, size_t size);
  size_t read(std::byte* data, size_t size);
  // Hands what has arrived (at most `limit` and kMaxMove bytes, whole `unit`s only, unit <= 16) to
  // `consume` in place, in one or a few pieces, then releases it; returns the bytes taken.
  // Both ends must move whole units for an element never to straddle a read.
  size_t consume(size_t limit, size_t unit, const std::function<void(std::span<const std::byte>)>& consume);

  // Before sleeping: the reader says it waits for data, the writer for space. Each returns
  // the word to sleep on (sleepWhileAllSet in wake_word.h), or nullptr, with the word
  // cleared, when what it waits for is already there; the other side's next write or read
  // wakes the sleeper. After waking, each side clears its own word only: the other one
  // belongs to the neighbour, who may be asleep on it.
  std::atomic<uint32_t>* readerMaySleep();
  std::atomic<uint32_t>* writerMaySleep();
  void readerAwake();
  void writerAwake();

 private:
  // Monotonic byte counters on separate cache lines: head is written only by the writer,
  // tail only by the reader; release/acquire order the payload with them.
  struct Header {
    alignas(64) std::atomic<uint64_t> head;
    alignas(64) std::atomic<uint64_t> tail;
    // 1 while that side sleeps (or is about to) in a futex on the word; the other side
    // clears it and wakes it after moving data. Seq_cst against head and tail, so one side
    // either sees the other's progress or the other sees it asleep (never neither).
    alignas(64) std::atomic<uint32_t> readerAsleep;
    std::atomic<uint32_t> writerAsleep;
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be address-free");
  static constexpr size_t kDataOffset = 4096;

  ShmLink(void* base, size_t length);
  static Result<ShmLink> map(int fd, const std::string& name);
  // ftruncate, posix_fallocate, map, a fresh header; closes fd.
  static Result<ShmLink> sizeAndMap(int fd, const std::string& name, size_t capacity);

  void* base_ = nullptr;
  size_t length_ = 0;
  size_t capacity_ = 0;
  Header* header_ = nullptr;
  std::byte* data_ = nullptr;
};

}  // namespace hvd::backends::tcp
