// collectives/exchange_reduce.cc: segments of at most kReduceSegmentBytes each way. Each
// direction is a byte stream, so the two sides may cut different sizes into different
// numbers of segments; the number of calls is the larger of the two, on both sides.
#include "collectives/exchange_reduce.h"

#include <algorithm>

namespace hvd::collectives {

Status exchangeAndReduce(Transport& t, int to, std::span<const std::byte> send, int from, void* target,
                         size_t count, DataType type, ReduceOp op, Operands order) {
  const size_t width = dataTypeSize(type);
  const size_t segment = std::max<size_t>(width, kReduceSegmentBytes / width * width);
  const size_t recvBytes = count * width;
  size_t segments = std::max<size_t>(1, (std::max(send.size(), recvBytes) + segment - 1) / segment);
  std::byte* into = static_cast<std::byte*>(target);
  for (size_t k = 0; k < segments; ++k) {
    size_t sendFrom = std::min(send.size(), k * segment), sendTo = std::min(send.size(), (k + 1) * segment);
    size_t recvFrom = std::min(recvBytes, k * segment), recvTo = std::min(recvBytes, (k + 1) * segment);
    HVD_RETURN_IF_ERROR(t.exchangeWithInto(to, send.subspan(sendFrom, sendTo - sendFrom), from, recvTo - recvFrom,
                                           width, [&](std::span<const std::byte> piece) {
                                             reduceInto(into, piece.data(), piece.size() / width, type, op, order);
                                             into += piece.size();
                                           }));
  }
  return Status::ok();
}

}  // namespace hvd::collectives
