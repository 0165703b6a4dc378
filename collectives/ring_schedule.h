// collectives/ring_schedule.h: pure arithmetic, tested exhaustively.
// The buffer is cut into one chunk per rank (trailing chunks may be short or empty).
// Reduce-scatter step s: rank r sends chunk (r - s) mod n to its right neighbour and
// reduces chunk (r - s - 1) mod n received from its left; after n - 1 steps rank r owns
// the fully reduced chunk (r + 1) mod n, which the allgather phase then circulates:
// allgather step s sends chunk (r + 1 - s) mod n and receives chunk (r - s) mod n.
#pragma once

#include <cstddef>

namespace hvd::collectives {

struct Chunk {
  size_t offset = 0;  // in elements
  size_t count = 0;
};

class RingSchedule {
 public:
  RingSchedule(int rank, int size, size_t elements);

  Chunk chunk(int index) const;  // index taken mod size
  Chunk sendChunk(int step) const { return chunk(rank_ - step); }
  Chunk recvChunk(int step) const { return chunk(rank_ - step - 1); }
  Chunk gatherSendChunk(int step) const { return chunk(rank_ + 1 - step); }
  Chunk gatherRecvChunk(int step) const { return chunk(rank_ - step); }

  int steps() const { return size_ - 1; }  // per phase
  int right() const { return (rank_ + 1) % size_; }
  int left() const { return (rank_ + size_ - 1) % size_; }

 private:
  int rank_, size_;
  size_t elements_;
};

}  // namespace hvd::collectives
