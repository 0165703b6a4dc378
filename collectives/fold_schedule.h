// collectives/fold_schedule.h: pure arithmetic that lets the pairwise algorithms run on any
// rank count. With p the largest power of two not above n and r = n - p, ranks 0 .. 2r-1
// pair up (2i, 2i+1): the odd one hands its buffer to the even one first ("fold") and gets
// the result back at the end; the p ranks left take part as virtual ranks 0 .. p-1 (rank
// 2i is virtual i, rank q >= 2r is virtual q - r). Virtual ranks keep the real order, so
// "lower ranks' operands first" still names one reduction tree.
#pragma once

namespace hvd::collectives {

class FoldSchedule {
 public:
  FoldSchedule(int rank, int size);

  int activeSize() const { return active_; }           // p: a power of two
  bool folded() const { return 2 * extra_ > rank_; }   // in a pair (0 .. 2r-1)
  bool participates() const { return !folded() || rank_ % 2 == 0; }
  // The other rank of this rank's pair; only when folded().
  int pairPartner() const { return rank_ ^ 1; }
  // This rank's virtual rank; only when participates().
  int virtualRank() const { return rank_ < 2 * extra_ ? rank_ / 2 : rank_ - extra_; }
  // The real rank playing virtual rank v.
  int realRank(int v) const { return v < extra_ ? 2 * v : v + extra_; }

 private:
  int rank_, active_, extra_;
};

}  // namespace hvd::collectives
