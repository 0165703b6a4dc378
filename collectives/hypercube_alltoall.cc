// collectives/hypercube_alltoall.cc: the hypercube all-to-all, and the choice between it and
// the ring.
#include "collectives/hypercube_alltoall.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "collectives/ring_alltoall.h"

namespace hvd::collectives {
namespace {

// A block this rank holds: what `from` sends `to`, and where its bytes are now.
struct Held {
  int from = 0, to = 0;
  const std::byte* bytes = nullptr;
  size_t size = 0;
};

// Both partners order a step's blocks alike: by destination, then source. At the last
// step every block arriving is this rank's, so that order is source order, as in `out`.
bool before(const Held& a, const Held& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; }

// What crosses between a rank and its partner at the step for `bit`, from the side of the
// rank whose holdings go: blocks whose source agrees with `sourceLike` from `bit` up, bound
// for ranks that agree with `destLike` below 2 * bit. n / 2 blocks, visited as f(from, to).
template <typename F>
void forEachCrossing(int n, int bit, int sourceLike, int destLike, F f) {
  const int sourceBase = sourceLike & ~(bit - 1), destBase = destLike & (2 * bit - 1);
  for (int j = 0; j < bit; ++j) {
    for (int d = destBase; d < n; d += 2 * bit) f(sourceBase + j, d);
  }
}

}  // namespace

Status hypercubeAlltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                          std::vector<std::byte>& scratch) {
  const int n = t.size(), r = t.rank();
  const size_t un = static_cast<size_t>(n);
  if ((n & (n - 1)) != 0) {
    return Status(Errc::kInvalidArgument, "hypercube alltoall: " + std::to_string(n) + " ranks is not a power of two");
  }
  if (bytesMatrix.size() != un * un) {
    return Status(Errc::kInvalidArgument, "alltoall: " + std::to_string(bytesMatrix.size()) + " block sizes given for " +
                                              std::to_string(n) + " ranks (" + std::to_string(un * un) + " needed)");
  }
  auto size = [&](int from, int to) { return bytesMatrix[static_cast<size_t>(from) * un + static_cast<size_t>(to)]; };
  auto* outBytes = static_cast<std::byte*>(out);
  std::vector<size_t> outAt(un + 1, 0);  // where each source's block goes in `out`
  for (size_t k = 0; k < un; ++k) outAt[k + 1] = outAt[k] + size(static_cast<int>(k), r);

  // Invariant: before the step for `bit`, this rank holds the blocks whose source agrees
  // with it on every bit from `bit` up and whose destination agrees with it below `bit`.
  std::vector<Held> held;
  const auto* sendBytes = static_cast<const std::byte*>(send);
  size_t sendAt = 0;
  for (int d = 0; d < n; ++d) {
    held.push_back({r, d, sendBytes + sendAt, size(r, d)});
    sendAt += size(r, d);
  }

  // The scratch: one region packs what goes out; behind it, each step's arrivals stay until
  // passed on or copied out. Sized for the largest step going out and every step coming in
  // but the last (which lands in `out`). Going: held here (source agrees with this rank from
  // `bit` up), bound across (destination agrees with the partner up to `bit`); coming: the
  // same from the partner's side.
  size_t packLargest = 0, arrivals = 0;
  for (int bit = 1; bit < n; bit <<= 1) {
    size_t going = 0;
    forEachCrossing(n, bit, r, r ^ bit, [&](int from, int to) { going += size(from, to); });
    packLargest = std::max(packLargest, going);
    if (bit < n / 2) forEachCrossing(n, bit, r ^ bit, r, [&](int from, int to) { arrivals += size(from, to); });
  }
  if (scratch.size() < packLargest + arrivals) scratch.resize(packLargest + arrivals);
  std::byte* pack = scratch.data();
  std::byte* landing = scratch.data() + packLargest;

  for (int bit = 1; bit < n; bit <<= 1) {
    const int partner = r ^ bit;
    const bool last = bit == n / 2;
    std::vector<Held> going, kept, coming;
    for (const Held& h : held) ((h.to ^ r) & bit ? going : kept).push_back(h);
    std::sort(going.begin(), going.end(), before);
    size_t packed = 0;
    for (const Held& h : going) {
      if (h.size > 0) std::memcpy(pack + packed, h.bytes, h.size);
      packed += h.size;
    }
    // What the partner sends: its blocks bound for ranks agreeing with this one up to `bit`.
    forEachCrossing(n, bit, partner, r, [&](int from, int to) { coming.push_back({from, to, nullptr, size(from, to)}); });
    std::sort(coming.begin(), coming.end(), before);
    size_t arriving = 0;
    for (const Held& h : coming) arriving += h.size;
    // The last step's blocks are all this rank's, from a run of consecutive sources: they
    // land in `out` where they belong.
    std::byte* into = last ? outBytes + (coming.empty() ? 0 : outAt[static_cast<size_t>(coming.front().from)]) : landing;
    HVD_RETURN_IF_ERROR(t.exchangeWith(partner, {pack, packed}, partner, {into, arriving}));
    size_t at = 0;
    for (Held& h : coming) h.bytes = into + at, at += h.size;
    if (!last) landing += arriving;
    held = std::move(kept);
    held.insert(held.end(), coming.begin(), coming.end());
  }
  // Now every block held is this rank's; those that did not arrive at the last step (its
  // own, and those from the ranks on its side of the top bit) are copied into place.
  for (const Held& h : held) {
    std::byte* at = outBytes + outAt[static_cast<size_t>(h.from)];
    if (h.size > 0 && h.bytes != at) std::memcpy(at, h.bytes, h.size);
  }
  return Status::ok();
}

Status alltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                 std::vector<std::byte>& scratch) {
  const int n = t.size();
  if (n >= 4 && (n & (n - 1)) == 0) return hypercubeAlltoallv(t, send, bytesMatrix, out, scratch);
  return ringAlltoallv(t, send, bytesMatrix, out, scratch);
}

}  // namespace hvd::collectives
