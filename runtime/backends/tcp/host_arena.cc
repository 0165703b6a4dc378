// runtime/backends/tcp/host_arena.cc: the region's layout, the count-in and the tree.
#include "runtime/backends/tcp/host_arena.h"

#include <bit>
#include <cstring>
#include <new>

#include "collectives/fold_schedule.h"
#include "runtime/backends/tcp/wake_word.h"

namespace hvd::backends::tcp {

// The counters, each on its own line: ranks counting in do not slow the ones reading.
// Waiting ranks sleep on `finished` itself, and the last one in wakes them all with one
// system call. Measured with 4 plain processes counting in beside 2 busy loops on 2 cores:
// medians of 9.8-10.4 us a call and 13 us of CPU, against 11.4-17.0 us and 20 us of CPU
// where the last one woke each sleeper on a word of its own (docs/benchmarks.md, busy cores).
struct HostArena::Header {
  alignas(kLine) std::atomic<uint32_t> finished;  // calls every rank has counted into
  struct alignas(kLine) Counter {
    std::atomic<uint32_t> in;
  };
  Counter arrived[2];  // ranks counted into the call, by the call's set
  alignas(kLine) std::atomic<uint32_t> sleepers;  // ranks asleep on `finished`, or about to be
};

struct alignas(HostArena::kLine) HostArena::Seat {
  std::atomic<uint32_t> reached;  // the calls it has counted into
};

namespace {

size_t slotBytesFor(int ranks) { return ranks < 1 ? 0 : HostArena::kSlotsBytes / ranks / HostArena::kLine * HostArena::kLine; }

}  // namespace

size_t HostArena::bytesFor(int ranks) {
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  return sizeof(Header) + sizeof(Seat) * static_cast<size_t>(ranks) + 2 * static_cast<size_t>(ranks) * slotBytesFor(ranks);
}

HostArena::HostArena(std::span<std::byte> region, int ranks, int rank)
    : base_(region.data()), ranks_(ranks), rank_(rank), slotBytes_(slotBytesFor(ranks)) {}

// Zero bytes are zeroed counters (lock-free 32-bit atomics are plain words), so nothing is
// constructed here: a rank starting an object in place would write over counts other ranks
// have already made.
HostArena::Header& HostArena::header() const { return *std::launder(reinterpret_cast<Header*>(base_)); }

HostArena::Seat& HostArena::seat(int rank) const {
  return std::launder(reinterpret_cast<Seat*>(base_ + sizeof(Header)))[rank];
}

const std::byte* HostArena::slot(int rank) const {
  const size_t set = call_ & 1;
  return base_ + sizeof(Header) + sizeof(Seat) * static_cast<size_t>(ranks_) +
         (set * static_cast<size_t>(ranks_) + static_cast<size_t>(rank)) * slotBytes_;
}

void HostArena::arrive(std::span<const std::byte> mine) {
  bytes_ = mine.size();
  if (bytes_ > 0) std::memcpy(const_cast<std::byte*>(slot(rank_)), mine.data(), bytes_);
  seat(rank_).reached.store(call_ + 1, std::memory_order_relaxed);
  // Releasing this rank's slot; the last rank in acquires every slot through the counter.
  auto& in = header().arrived[call_ & 1].in;
  if (in.fetch_add(1, std::memory_order_acq_rel) + 1 != static_cast<uint32_t>(ranks_)) return;
  // Set back for call_ + 2, which no rank starts before it has seen this call finished.
  in.store(0, std::memory_order_relaxed);
  // Sequentially consistent with maySleep's count and load: a rank about to sleep either
  // sees the call finished or is counted and woken. Without sleepers (ranks that spin while
  // they have cores) no system call.
  header().finished.store(call_ + 1, std::memory_order_seq_cst);
  if (header().sleepers.load(std::memory_order_seq_cst) > 0) wakeAll(header().finished);
}

bool HostArena::complete() const { return header().finished.load(std::memory_order_acquire) == call_ + 1; }

std::optional<SleepOn> HostArena::maySleep() {
  header().sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (header().finished.load(std::memory_order_seq_cst) == call_ + 1) {
    awake();
    return std::nullopt;
  }
  // `finished` holds call_ until the last rank in finishes this call.
  return SleepOn{&header().finished, call_};
}

// A count a waker reads late only costs it a wake-up nobody needed.
void HostArena::awake() { header().sleepers.fetch_sub(1, std::memory_order_relaxed); }

void HostArena::reduce(std::span<std::byte> out, const collectives::Combine& combine) {
  if (bytes_ == 0) return;
  collectives::FoldSchedule fold(0, ranks_);
  const int active = fold.activeSize();
  partial_.resize(static_cast<size_t>(std::countr_zero(static_cast<unsigned>(active))) + 1);
  treeInto(out.data(), 0, active, 0, combine);
}

void HostArena::treeInto(std::byte* dst, int lo, int hi, int depth, const collectives::Combine& combine) {
  if (hi - lo == 1) {
    // A leaf: a rank, or a folded pair, the even rank's operand first (fold_schedule.h).
    collectives::FoldSchedule fold(0, ranks_);
    const int real = fold.realRank(lo);
    std::memcpy(dst, slot(real), bytes_);
    if (lo < ranks_ - fold.activeSize()) combine(dst, slot(real + 1), collectives::Operands::kTargetFirst);
    return;
  }
  const int mid = lo + (hi - lo) / 2;
  treeInto(dst, lo, mid, depth + 1, combine);
  std::vector<std::byte>& right = partial_[static_cast<size_t>(depth)];
  right.resize(bytes_);
  treeInto(right.data(), mid, hi, depth + 1, combine);
  combine(dst, right.data(), collectives::Operands::kTargetFirst);
}

std::vector<int> HostArena::late() const {
  std::vector<int> missing;
  for (int r = 0; r < ranks_; ++r) {
    if (seat(r).reached.load(std::memory_order_relaxed) != call_ + 1) missing.push_back(r);
  }
  return missing;
}

}  // namespace hvd::backends::tcp
