// collectives/combine_allreduce.cc: the fold, the pairwise steps and the unfold of
// recursive doubling, with whole-buffer exchanges into a scratch copy.
#include "collectives/combine_allreduce.h"

#include <vector>

#include "collectives/fold_schedule.h"
#include "collectives/halving_schedule.h"

namespace hvd::collectives {

Status combineAllreduce(Transport& t, std::span<std::byte> data, const Combine& combine) {
  if (t.size() == 1 || data.empty()) return Status::ok();
  FoldSchedule f(t.rank(), t.size());
  std::vector<std::byte> in(data.size());
  if (f.folded()) {
    if (f.participates()) {
      HVD_RETURN_IF_ERROR(t.exchangeWith(f.pairPartner(), {}, f.pairPartner(), in));
      combine(data.data(), in.data(), Operands::kTargetFirst);  // the odd partner is the higher rank
    } else {
      HVD_RETURN_IF_ERROR(t.exchangeWith(f.pairPartner(), data, f.pairPartner(), {}));
    }
  }
  if (f.participates()) {
    HalvingSchedule s(f.virtualRank(), f.activeSize(), 0);  // only its partners and sides
    for (int step = 0; step < s.steps(); ++step) {
      int partner = f.realRank(s.partner(step));
      HVD_RETURN_IF_ERROR(t.exchangeWith(partner, data, partner, in));
      combine(data.data(), in.data(), s.keepsLowerHalf(step) ? Operands::kTargetFirst : Operands::kSourceFirst);
    }
  }
  if (!f.folded()) return Status::ok();
  if (f.participates()) return t.exchangeWith(f.pairPartner(), data, f.pairPartner(), {});
  return t.exchangeWith(f.pairPartner(), {}, f.pairPartner(), data);
}

}  // namespace hvd::collectives
