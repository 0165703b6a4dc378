// collectives/adasum.cc: the folded halving steps with a sum of terms inside each.
#include "collectives/adasum.h"

#include <algorithm>
#include <vector>

#include "collectives/adasum_combine.h"
#include "collectives/exchange_reduce.h"
#include "collectives/fold_schedule.h"
#include "collectives/halving_schedule.h"

namespace hvd::collectives {
namespace {

// Where each tensor starts in the buffer, and one past the last element.
class Layout {
 public:
  explicit Layout(std::span<const size_t> counts) : starts_{0} {
    for (size_t c : counts) starts_.push_back(starts_.back() + c);
  }
  size_t tensors() const { return starts_.size() - 1; }
  size_t total() const { return starts_.back(); }
  // Calls f(tensor, offset, count) for each tensor's part inside [from, from + count).
  template <typename F>
  void forEachIn(Chunk range, F f) const {
    const size_t end = range.offset + range.count;
    // The first tensor that ends after the range starts.
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), range.offset) - starts_.begin());
    for (i = i == 0 ? 0 : i - 1; i < tensors() && starts_[i] < end; ++i) {
      const size_t lo = std::max(starts_[i], range.offset), hi = std::min(starts_[i + 1], end);
      if (hi > lo) f(i, lo, hi - lo);
    }
  }

 private:
  std::vector<size_t> starts_;
};

// Combines `mine` (the buffer, from element 0) with `theirs` (the other operand of the
// range, from its first element) over `range`, given each tensor's summed terms.
void combine(const Layout& layout, Chunk range, std::byte* mine, const std::byte* theirs, DataType type,
             const std::vector<double>& terms, bool mineIsLeft) {
  const size_t width = dataTypeSize(type);
  layout.forEachIn(range, [&](size_t i, size_t offset, size_t count) {
    AdasumTerms whole{terms[3 * i], terms[3 * i + 1], terms[3 * i + 2]};
    adasumApply(mine + offset * width, theirs + (offset - range.offset) * width, count, type,
                adasumCoefficients(whole), mineIsLeft);
  });
}

// Each tensor's terms over its part of `range` (three doubles a tensor, zero outside it).
std::vector<double> termsIn(const Layout& layout, Chunk range, const std::byte* mine, const std::byte* theirs,
                            DataType type, bool mineIsLeft) {
  const size_t width = dataTypeSize(type);
  std::vector<double> terms(3 * layout.tensors(), 0.0);
  layout.forEachIn(range, [&](size_t i, size_t offset, size_t count) {
    const std::byte* a = mine + offset * width;
    const std::byte* b = theirs + (offset - range.offset) * width;
    AdasumTerms t = mineIsLeft ? adasumTerms(a, b, count, type) : adasumTerms(b, a, count, type);
    terms[3 * i] = t.dot, terms[3 * i + 1] = t.leftNormSq, terms[3 * i + 2] = t.rightNormSq;
  });
  return terms;
}

// Sums `terms` over the ranks that share this one's bits above `step`: recursive doubling
// with the partners of steps 0 .. step, the lower partner's operand first, so that every
// rank of the group gets the same bits and so the same coefficients.
Status sumOverGroup(Transport& t, const FoldSchedule& f, const HalvingSchedule& s, int step,
                    std::vector<double>& terms) {
  std::vector<double> outgoing(terms.size());
  for (int j = 0; j <= step; ++j) {
    const int partner = f.realRank(s.partner(j));
    outgoing = terms;  // the arriving terms are reduced into `terms` while these go out
    HVD_RETURN_IF_ERROR(exchangeAndReduce(t, partner, std::as_bytes(std::span(outgoing)), partner, terms.data(),
                                          terms.size(), DataType::kFloat64, ReduceOp::kSum,
                                          s.keepsLowerHalf(j) ? Operands::kTargetFirst : Operands::kSourceFirst));
  }
  return Status::ok();
}

// Off a power of two: the odd rank of a pair hands over its buffer and the even one, the
// left operand, combines the two whole tensors alone; the result comes back at the end.
Status fold(Transport& t, const FoldSchedule& f, const Layout& layout, std::span<std::byte> whole, DataType type,
            std::byte* theirs) {
  if (!f.folded()) return Status::ok();
  if (!f.participates()) return t.exchangeWith(f.pairPartner(), whole, f.pairPartner(), {});
  HVD_RETURN_IF_ERROR(t.exchangeWith(f.pairPartner(), {}, f.pairPartner(), {theirs, whole.size()}));
  const Chunk all{0, layout.total()};
  combine(layout, all, whole.data(), theirs, type, termsIn(layout, all, whole.data(), theirs, type, true), true);
  return Status::ok();
}

Status unfold(Transport& t, const FoldSchedule& f, std::span<std::byte> whole) {
  if (!f.folded()) return Status::ok();
  if (f.participates()) return t.exchangeWith(f.pairPartner(), whole, f.pairPartner(), {});
  return t.exchangeWith(f.pairPartner(), {}, f.pairPartner(), whole);
}

}  // namespace

Status adasumAllreduce(Transport& t, void* data, DataType type, std::span<const size_t> tensorCounts,
                       std::vector<std::byte>& scratch) {
  if (!adasumTakes(type)) {
    return Status(Errc::kInvalidArgument, "Adasum combines float16, bfloat16, float32 and float64 tensors, not " +
                                              std::string(dataTypeName(type)));
  }
  const Layout layout(tensorCounts);
  if (t.size() == 1 || layout.total() == 0) return Status::ok();
  const size_t width = dataTypeSize(type);
  std::byte* base = static_cast<std::byte*>(data);
  const std::span<std::byte> whole(base, layout.total() * width);
  auto bytes = [&](Chunk c) { return std::span<std::byte>(base + c.offset * width, c.count * width); };

  // The other rank's operand: the whole buffer where a pair folds, else the first step's half
  // (a rank that folds away receives nothing).
  FoldSchedule f(t.rank(), t.size());
  const size_t need = !f.participates() ? 0 : f.folded() ? whole.size() : (layout.total() + 1) / 2 * width;
  if (scratch.size() < need) scratch.resize(need);
  std::byte* theirs = scratch.data();
  HVD_RETURN_IF_ERROR(fold(t, f, layout, whole, type, theirs));
  if (f.participates()) {
    HalvingSchedule s(f.virtualRank(), f.activeSize(), layout.total());
    for (int step = 0; step < s.steps(); ++step) {
      const int partner = f.realRank(s.partner(step));
      const Chunk keep = s.kept(step);
      HVD_RETURN_IF_ERROR(t.exchangeWith(partner, bytes(s.given(step)), partner, {theirs, keep.count * width}));
      // The lower group's vector is the left operand, on both ranks of the pair.
      const bool mineIsLeft = s.keepsLowerHalf(step);
      std::vector<double> terms = termsIn(layout, keep, base, theirs, type, mineIsLeft);
      HVD_RETURN_IF_ERROR(sumOverGroup(t, f, s, step, terms));
      combine(layout, keep, base, theirs, type, terms, mineIsLeft);
    }
    for (int step = s.steps() - 1; step >= 0; --step) {
      const int partner = f.realRank(s.partner(step));
      HVD_RETURN_IF_ERROR(t.exchangeWith(partner, bytes(s.kept(step)), partner, bytes(s.given(step))));
    }
  }
  return unfold(t, f, whole);
}

}  // namespace hvd::collectives
