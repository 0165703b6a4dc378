// collectives/halving_doubling.cc: the two pairwise allreduces, on any rank count through
// the fold (fold_schedule.h).
#include "collectives/halving_doubling.h"

#include <cstring>
#include <vector>

#include "collectives/exchange_reduce.h"
#include "collectives/fold_schedule.h"
#include "collectives/halving_schedule.h"

namespace hvd::collectives {
namespace {

// The rank whose bit `step` is 0 holds the lower group's partial result: it goes first.
Operands orderFor(const HalvingSchedule& s, int step) {
  return s.keepsLowerHalf(step) ? Operands::kTargetFirst : Operands::kSourceFirst;
}

std::span<std::byte> wholeBuffer(void* data, size_t count, DataType type) {
  return {static_cast<std::byte*>(data), count * dataTypeSize(type)};
}

// Before the pairwise steps: the odd rank of each pair hands its buffer to the even one,
// which reduces it into its own (its own, lower rank's, operand first).
Status fold(Transport& t, const FoldSchedule& f, void* data, size_t count, DataType type, ReduceOp op) {
  if (!f.folded()) return Status::ok();
  if (f.participates()) {
    return exchangeAndReduce(t, f.pairPartner(), {}, f.pairPartner(), data, count, type, op, Operands::kTargetFirst);
  }
  return t.exchangeWith(f.pairPartner(), wholeBuffer(data, count, type), f.pairPartner(), {});
}

// After them: the even rank hands the finished result back.
Status unfold(Transport& t, const FoldSchedule& f, void* data, size_t count, DataType type) {
  if (!f.folded()) return Status::ok();
  if (f.participates()) return t.exchangeWith(f.pairPartner(), wholeBuffer(data, count, type), f.pairPartner(), {});
  return t.exchangeWith(f.pairPartner(), {}, f.pairPartner(), wholeBuffer(data, count, type));
}

}  // namespace

Status halvingDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  if (t.size() == 1 || count == 0) return Status::ok();
  FoldSchedule f(t.rank(), t.size());
  HVD_RETURN_IF_ERROR(fold(t, f, data, count, type, op));
  if (f.participates()) {
    const size_t width = dataTypeSize(type);
    std::byte* base = static_cast<std::byte*>(data);
    auto bytes = [&](Chunk c) { return std::span<std::byte>(base + c.offset * width, c.count * width); };
    HalvingSchedule s(f.virtualRank(), f.activeSize(), count);
    for (int step = 0; step < s.steps(); ++step) {
      int partner = f.realRank(s.partner(step));
      Chunk keep = s.kept(step);
      HVD_RETURN_IF_ERROR(exchangeAndReduce(t, partner, bytes(s.given(step)), partner, base + keep.offset * width,
                                            keep.count, type, op, orderFor(s, step)));
    }
    for (int step = s.steps() - 1; step >= 0; --step) {
      int partner = f.realRank(s.partner(step));
      HVD_RETURN_IF_ERROR(t.exchangeWith(partner, bytes(s.kept(step)), partner, bytes(s.given(step))));
    }
    if (op == ReduceOp::kAverage) divideForAverage(data, count, type, t.size());
  }
  return unfold(t, f, data, count, type);
}

Status recursiveDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  if (t.size() == 1 || count == 0) return Status::ok();
  FoldSchedule f(t.rank(), t.size());
  HVD_RETURN_IF_ERROR(fold(t, f, data, count, type, op));
  if (f.participates()) {
    const size_t bytes = count * dataTypeSize(type);
    HalvingSchedule s(f.virtualRank(), f.activeSize(), 0);  // only its partners and sides
    // The arriving buffer is reduced into `data` while `data` is still being sent: send a copy.
    std::vector<std::byte> outgoing(bytes);
    for (int step = 0; step < s.steps(); ++step) {
      int partner = f.realRank(s.partner(step));
      std::memcpy(outgoing.data(), data, bytes);
      HVD_RETURN_IF_ERROR(
          exchangeAndReduce(t, partner, outgoing, partner, data, count, type, op, orderFor(s, step)));
    }
    if (op == ReduceOp::kAverage) divideForAverage(data, count, type, t.size());
  }
  return unfold(t, f, data, count, type);
}

}  // namespace hvd::collectives
