// collectives/halving_schedule.h: pure arithmetic for recursive halving and doubling on a
// power-of-two number of ranks, tested exhaustively.
// Step s (0 .. log2(size) - 1) pairs rank r with r ^ (1 << s). Both hold the same range of
// the buffer and cut it in two; the rank whose bit s is 0 keeps the lower half. In the
// reduce-scatter each sends the half it gives away and reduces the half it keeps, so after
// the last step it owns one fully reduced block; the allgather runs the steps backwards,
// sending what it keeps and receiving what it gave, until every rank has the whole buffer.
// Nearest partner first: with ranks numbered host by host, the steps that move the most
// data stay inside a host.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/ring_schedule.h"

namespace hvd::collectives {

bool isPowerOfTwo(int n);

class HalvingSchedule {
 public:
  HalvingSchedule(int rank, int size, size_t elements);  // size: a power of two

  int steps() const { return static_cast<int>(kept_.size()); }  // log2(size)
  int partner(int step) const { return rank_ ^ (1 << step); }
  bool keepsLowerHalf(int step) const { return ((rank_ >> step) & 1) == 0; }
  Chunk kept(int step) const { return kept_[static_cast<size_t>(step)]; }
  Chunk given(int step) const { return given_[static_cast<size_t>(step)]; }

 private:
  int rank_;
  std::vector<Chunk> kept_, given_;
};

}  // namespace hvd::collectives
