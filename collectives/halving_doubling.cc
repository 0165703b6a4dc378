// collectives/halving_doubling.cc: the two pairwise allreduces.
#include "collectives/halving_doubling.h"

#include <cstring>
#include <string>
#include <vector>

#include "collectives/exchange_reduce.h"
#include "collectives/halving_schedule.h"

namespace hvd::collectives {
namespace {

Status needPowerOfTwo(int size) {
  if (isPowerOfTwo(size)) return Status::ok();
  return Status(Errc::kInvalidArgument, "halving-doubling allreduce needs a power-of-two number of ranks, not " +
                                            std::to_string(size));
}

// The rank whose bit `step` is 0 holds the lower group's partial result: it goes first.
Operands orderFor(const HalvingSchedule& s, int step) {
  return s.keepsLowerHalf(step) ? Operands::kTargetFirst : Operands::kSourceFirst;
}

}  // namespace

Status halvingDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  HVD_RETURN_IF_ERROR(needPowerOfTwo(t.size()));
  if (t.size() == 1 || count == 0) return Status::ok();
  const size_t width = dataTypeSize(type);
  std::byte* base = static_cast<std::byte*>(data);
  auto bytes = [&](Chunk c) { return std::span<std::byte>(base + c.offset * width, c.count * width); };
  HalvingSchedule s(t.rank(), t.size(), count);
  for (int step = 0; step < s.steps(); ++step) {
    Chunk keep = s.kept(step);
    HVD_RETURN_IF_ERROR(exchangeAndReduce(t, s.partner(step), bytes(s.given(step)), s.partner(step),
                                          base + keep.offset * width, keep.count, type, op, orderFor(s, step)));
  }
  for (int step = s.steps() - 1; step >= 0; --step) {
    HVD_RETURN_IF_ERROR(t.exchangeWith(s.partner(step), bytes(s.kept(step)), s.partner(step), bytes(s.given(step))));
  }
  if (op == ReduceOp::kAverage) divideForAverage(data, count, type, t.size());
  return Status::ok();
}

Status recursiveDoublingAllreduce(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  HVD_RETURN_IF_ERROR(needPowerOfTwo(t.size()));
  if (t.size() == 1 || count == 0) return Status::ok();
  const size_t bytes = count * dataTypeSize(type);
  HalvingSchedule s(t.rank(), t.size(), 0);  // only its partners and sides
  // The arriving buffer is reduced into `data` while `data` is still being sent: send a copy.
  std::vector<std::byte> outgoing(bytes);
  for (int step = 0; step < s.steps(); ++step) {
    std::memcpy(outgoing.data(), data, bytes);
    HVD_RETURN_IF_ERROR(exchangeAndReduce(t, s.partner(step), outgoing, s.partner(step), data, count, type, op,
                                          orderFor(s, step)));
  }
  if (op == ReduceOp::kAverage) divideForAverage(data, count, type, t.size());
  return Status::ok();
}

}  // namespace hvd::collectives
