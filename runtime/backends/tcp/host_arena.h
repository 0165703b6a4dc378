// runtime/backends/tcp/host_arena.h: a small allreduce among the ranks of one host in one
// step: each rank writes its buffer into its own slot of a shared region and counts itself
// in; the last one in wakes the others, and each then reduces every slot itself. A rank that
// waits is woken once per call, against one wake-up per pairwise step in recursive doubling
// (two at np=4, each waiting for the partner to be put on a core), which beside other work on
// the cores is most of a small allreduce's time.
//
// Every rank reduces the slots in recursive doubling's tree (fold_schedule.h: pairs folded
// first, then halves, lower ranks' operands first), so the arena gives the bits
// recursiveDoublingAllreduce and combineAllreduce give, wherever a call runs.
//
// Two sets of slots, used by turns: a rank starting call k+2 in one set has seen every rank
// count itself into call k+1, so every rank is done reading call k's slots there.
//
// The region lives in the host board's memfd (host_board.h), made and zeroed by local rank 0.
// Waiting is the caller's (a transport's waitShared, which spins, sleeps and watches peers).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "collectives/combine_allreduce.h"
#include "runtime/backends/tcp/wake_word.h"

namespace hvd::backends::tcp {

class HostArena {
 public:
  // All of a call's slots together: every rank reads this much at most, so the slot size
  // shrinks as ranks are added (8 KiB at 4 ranks, 512 bytes at 64). Measured at np=4 on 2
  // cores (medians of 8 runs, both orders): 8 KiB took 15-17 us idle through the arena
  // against 20-22 pairwise, 31-33 against 41-44 beside busy loops; 16 KiB, reading 64 KiB
  // of slots, was no faster than the pairwise steps (28-30 / 25-27 idle, 55-56 / 51-55 busy).
  static constexpr size_t kSlotsBytes = 32 * 1024;
  static constexpr size_t kLine = 64;  // each rank's counters and slots on their own lines

  // The region `ranks` need.
  static size_t bytesFor(int ranks);
  // Over a region of bytesFor(ranks) bytes, aligned to kLine and zeroed before any rank
  // first uses it, as rank `rank`. The region stays the caller's.
  HostArena(std::span<std::byte> region, int ranks, int rank);

  int ranks() const { return ranks_; }
  // The largest buffer a call takes.
  size_t capacity() const { return slotBytes_; }

  // A call, in order, on every rank, with buffers of one size: arrive, wait until
  // complete() (maySleep/awake around a sleep), reduce, and finish.
  // Copies `mine` to this rank's slot and counts it in; the last rank in wakes the others.
  void arrive(std::span<const std::byte> mine);
  bool complete() const;
  // Before sleeping: the word to sleep on while it holds a value (sleepWhileEqual in
  // wake_word.h), or nullopt when the call is already complete; awake() after waking.
  std::optional<SleepOn> maySleep();
  void awake();
  // The result into `out` (arrive's size), reduced by `combine` (collectives/
  // combine_allreduce.h) in recursive doubling's tree.
  void reduce(std::span<std::byte> out, const collectives::Combine& combine);
  void finish() { ++call_; }
  // The ranks that have not counted themselves into this call (for a timeout's message).
  std::vector<int> late() const;

 private:
  struct Header;
  struct Seat;
  Header& header() const;
  Seat& seat(int rank) const;
  const std::byte* slot(int rank) const;  // this call's set
  // Recursive doubling's subtree over virtual ranks [lo, hi) into dst.
  void treeInto(std::byte* dst, int lo, int hi, int depth, const collectives::Combine& combine);

  std::byte* base_;
  int ranks_, rank_;
  size_t slotBytes_;
  size_t bytes_ = 0;  // this call's size
  uint32_t call_ = 0;  // calls finished: every rank counts the same ones
  std::vector<std::vector<std::byte>> partial_;  // treeInto's right subtrees, one per depth
};

}  // namespace hvd::backends::tcp
