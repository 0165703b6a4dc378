// collectives/ring_collectives.cc: the ring algorithms.
#include "collectives/ring_collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/exchange_reduce.h"
#include "collectives/ring_schedule.h"

namespace hvd::collectives {
namespace {

std::span<std::byte> bytesOf(void* base, size_t offset, size_t size) {
  return {static_cast<std::byte*>(base) + offset, size};
}

}  // namespace

Status ringAllreduceSmall(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  const int n = t.size();
  if (n == 1 || count == 0) return Status::ok();
  const size_t bytes = count * dataTypeSize(type);
  std::vector<std::byte> all(bytes * static_cast<size_t>(n));
  HVD_RETURN_IF_ERROR(ringAllgather(t, data, bytes, all.data()));
  std::memcpy(data, all.data(), bytes);
  for (int k = 1; k < n; ++k) reduceInto(data, all.data() + static_cast<size_t>(k) * bytes, count, type, op);
  if (op == ReduceOp::kAverage) divideForAverage(data, count, type, n);
  return Status::ok();
}

Status ringAllreduceLarge(Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  const int n = t.size();
  if (n == 1 || count == 0) return Status::ok();
  const size_t width = dataTypeSize(type);
  RingSchedule schedule(t.rank(), n, count);
  for (int step = 0; step < schedule.steps(); ++step) {
    Chunk out = schedule.sendChunk(step), in = schedule.recvChunk(step);
    HVD_RETURN_IF_ERROR(exchangeAndReduce(t, t.right(), bytesOf(data, out.offset * width, out.count * width), t.left(),
                                          static_cast<std::byte*>(data) + in.offset * width, in.count, type, op,
                                          Operands::kTargetFirst));
  }
  for (int step = 0; step < schedule.steps(); ++step) {
    Chunk out = schedule.gatherSendChunk(step), in = schedule.gatherRecvChunk(step);
    HVD_RETURN_IF_ERROR(t.exchange(bytesOf(data, out.offset * width, out.count * width), bytesOf(data, in.offset * width, in.count * width)));
  }
  if (op == ReduceOp::kAverage) divideForAverage(data, count, type, n);
  return Status::ok();
}

Status ringReduceScatterv(Transport& t, void* data, std::span<const size_t> countsPerRank, DataType type, ReduceOp op,
                          void* out) {
  const int n = t.size(), r = t.rank();
  if (countsPerRank.size() != static_cast<size_t>(n)) {
    return Status(Errc::kInvalidArgument, "reducescatter: " + std::to_string(countsPerRank.size()) +
                                              " counts given for " + std::to_string(n) + " ranks");
  }
  const size_t width = dataTypeSize(type);
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  for (size_t k = 0; k < static_cast<size_t>(n); ++k) offset[k + 1] = offset[k] + countsPerRank[k];
  auto part = [&](int k) {
    const size_t i = static_cast<size_t>(((k % n) + n) % n);
    return Chunk{offset[i], countsPerRank[i]};
  };
  // Step s sends part (r - s - 1), raw at step 0 and since holding what the ranks to the
  // left added, and reduces part (r - s - 2) into this rank's own as it arrives; after
  // n - 1 steps part r holds every rank's.
  for (int step = 0; step < n - 1; ++step) {
    Chunk send = part(r - step - 1), recv = part(r - step - 2);
    HVD_RETURN_IF_ERROR(exchangeAndReduce(t, t.right(), bytesOf(data, send.offset * width, send.count * width), t.left(),
                                          static_cast<std::byte*>(data) + recv.offset * width, recv.count, type, op,
                                          Operands::kTargetFirst));
  }
  Chunk mine = part(r);
  if (mine.count == 0) return Status::ok();
  std::memcpy(out, static_cast<const std::byte*>(data) + mine.offset * width, mine.count * width);
  if (op == ReduceOp::kAverage) divideForAverage(out, mine.count, type, n);
  return Status::ok();
}

Status ringAllgather(Transport& t, const void* mine, size_t bytes, void* out) {
  std::vector<size_t> sizes(static_cast<size_t>(t.size()), bytes);
  return ringAllgatherv(t, mine, sizes, out);
}

Status ringAllgatherv(Transport& t, const void* mine, std::span<const size_t> bytesPerRank, void* out) {
  const int n = t.size(), r = t.rank();
  if (bytesPerRank.size() != static_cast<size_t>(n)) {
    return Status(Errc::kInvalidArgument, "allgatherv: " + std::to_string(bytesPerRank.size()) +
                                              " sizes given for " + std::to_string(n) + " ranks");
  }
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  for (int k = 0; k < n; ++k) offset[static_cast<size_t>(k) + 1] = offset[static_cast<size_t>(k)] + bytesPerRank[static_cast<size_t>(k)];
  auto block = [&](int k) {
    size_t i = static_cast<size_t>(((k % n) + n) % n);
    return bytesOf(out, offset[i], bytesPerRank[i]);
  };
  if (bytesPerRank[static_cast<size_t>(r)] > 0) std::memcpy(block(r).data(), mine, bytesPerRank[static_cast<size_t>(r)]);
  // Step s: pass on block (r - s), which arrived in the step before, and receive (r - s - 1).
  for (int s = 0; s < n - 1; ++s) HVD_RETURN_IF_ERROR(t.exchange(block(r - s), block(r - s - 1)));
  return Status::ok();
}

Status ringBroadcast(Transport& t, void* data, size_t bytes, int root) {
  const int n = t.size();
  if (n == 1 || bytes == 0) return Status::ok();
  // Distance from the root along the ring: the root only sends, the last rank only
  // receives, and every rank between forwards bytes while more arrive (relay), so the
  // ring's hops overlap: about T(bytes) plus a little per hop instead of (n-1) T(bytes).
  int distance = ((t.rank() - root) % n + n) % n;
  auto all = bytesOf(data, 0, bytes);
  if (distance == 0) return t.exchange(all, {});
  if (distance == n - 1) return t.exchange({}, all);
  return t.relay(t.left(), t.right(), all);
}

Status ringBarrier(Transport& t) {
  const int n = t.size(), r = t.rank();
  if (n == 1) return Status::ok();
  // Lap 1: a token travels 0 -> 1 -> ... -> n-1 -> 0; a rank passes it on only once it has
  // entered, so when it returns to rank 0 every rank has. Lap 2 tells the others so.
  std::byte token{1};
  std::span<std::byte> slot(&token, 1);
  if (r == 0) {
    HVD_RETURN_IF_ERROR(t.exchange(slot, {}));
    HVD_RETURN_IF_ERROR(t.exchange({}, slot));
    return t.exchange(slot, {});
  }
  HVD_RETURN_IF_ERROR(t.exchange({}, slot));
  HVD_RETURN_IF_ERROR(t.exchange(slot, {}));
  HVD_RETURN_IF_ERROR(t.exchange({}, slot));
  return r == n - 1 ? Status::ok() : t.exchange(slot, {});
}

}  // namespace hvd::collectives
