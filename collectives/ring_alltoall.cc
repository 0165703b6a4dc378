// collectives/ring_alltoall.cc: the ring all-to-all.
#include "collectives/ring_alltoall.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace hvd::collectives {

Status ringAlltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                     std::vector<std::byte>& scratch) {
  const int n = t.size(), r = t.rank();
  const size_t un = static_cast<size_t>(n);
  if (bytesMatrix.size() != un * un) {
    return Status(Errc::kInvalidArgument, "alltoall: " + std::to_string(bytesMatrix.size()) + " block sizes given for " +
                                              std::to_string(n) + " ranks (" + std::to_string(un * un) + " needed)");
  }
  auto wrap = [n](int k) { return static_cast<size_t>(((k % n) + n) % n); };
  auto block = [&](int from, int to) { return bytesMatrix[wrap(from) * un + wrap(to)]; };
  // A bundle: what rank `origin` sends ranks origin + first .. origin + n - 1.
  auto bundle = [&](int origin, int first) {
    size_t bytes = 0;
    for (int k = first; k < n; ++k) bytes += block(origin, origin + k);
    return bytes;
  };
  const auto* sendBytes = static_cast<const std::byte*>(send);
  auto* outBytes = static_cast<std::byte*>(out);
  std::vector<size_t> sendAt(un + 1, 0), outAt(un + 1, 0);  // block offsets in send and out
  for (size_t k = 0; k < un; ++k) {
    sendAt[k + 1] = sendAt[k] + bytesMatrix[static_cast<size_t>(r) * un + k];
    outAt[k + 1] = outAt[k] + bytesMatrix[k * un + static_cast<size_t>(r)];
  }
  const size_t own = block(r, r);
  if (own > 0) std::memcpy(outBytes + outAt[wrap(r)], sendBytes + sendAt[wrap(r)], own);
  if (n == 1) return Status::ok();

  // Step 1 sends this rank's blocks for ranks r + 1 .. r + n - 1: one piece of the send
  // buffer at either end of the ring, else the tail and the head, copied together.
  // Two halves of the scratch take turns: one holds the bundle going out, the other the
  // one coming in.
  size_t largest = bundle(r, 1);
  for (int s = 1; s < n; ++s) largest = std::max(largest, bundle(r - s, s));
  if (scratch.size() < 2 * largest) scratch.resize(2 * largest);
  std::byte* outgoing = scratch.data();
  std::byte* incoming = scratch.data() + largest;
  std::span<const std::byte> next;
  if (r == 0 || r == n - 1) {
    next = {sendBytes + sendAt[wrap(r + 1)], bundle(r, 1)};
  } else {
    const size_t tail = sendAt[un] - sendAt[wrap(r + 1)], head = sendAt[wrap(r)];
    if (tail > 0) std::memcpy(outgoing, sendBytes + sendAt[wrap(r + 1)], tail);
    if (head > 0) std::memcpy(outgoing + tail, sendBytes, head);
    next = {outgoing, tail + head};
  }
  // Step s passes on the bundle of rank r - s + 1 and receives rank r - s's, whose front
  // block is this rank's; the last step's bundle is that block alone and lands in place.
  for (int s = 1; s < n; ++s) {
    const int origin = r - s;
    const size_t mine = block(origin, r), arriving = bundle(origin, s);
    if (s == n - 1) return t.exchange(next, {outBytes + outAt[wrap(origin)], mine});
    HVD_RETURN_IF_ERROR(t.exchange(next, {incoming, arriving}));
    if (mine > 0) std::memcpy(outBytes + outAt[wrap(origin)], incoming, mine);
    std::swap(outgoing, incoming);
    next = {outgoing + mine, arriving - mine};
  }
  return Status::ok();
}

}  // namespace hvd::collectives
