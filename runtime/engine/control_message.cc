// runtime/engine/control_message.cc: packing flags, counts and hashes for a byte-wise minimum.
#include "runtime/engine/control_message.h"

#include <algorithm>

namespace hvd::engine {
namespace {

void putHash(std::vector<std::uint8_t>& out, size_t at, std::uint64_t hash) {
  for (int i = 0; i < 8; ++i) {
    auto byte = static_cast<std::uint8_t>(hash >> (56 - 8 * i));
    out[at + static_cast<size_t>(i)] = byte;
    out[at + 8 + static_cast<size_t>(i)] = static_cast<std::uint8_t>(~byte);
  }
}

// Every rank's hash was equal when min(h) == max(h) = ~min(~h), byte by byte.
bool hashesAgree(std::span<const std::uint8_t> agreed, size_t at) {
  for (size_t i = 0; i < 8; ++i) {
    if (agreed[at + i] != static_cast<std::uint8_t>(~agreed[at + 8 + i])) return false;
  }
  return true;
}

}  // namespace

std::vector<std::uint8_t> encodeOffer(const ControlOffer& offer) {
  std::vector<std::uint8_t> out(kControlHeaderBytes + offer.cached.size());
  auto shutdown = offer.shutdownRank < 0 ? 0xffffffffu : static_cast<std::uint32_t>(offer.shutdownRank);
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<std::uint8_t>(shutdown >> (24 - 8 * i));
  out[4] = offer.hasAnnouncements ? 0 : 1;
  out[5] = offer.wantsStallCheck ? 0 : 1;
  auto count = static_cast<std::uint8_t>(std::min(offer.unnamedCount, 255u));
  out[6] = count;
  out[7] = static_cast<std::uint8_t>(255 - count);
  putHash(out, 8, offer.headHash);
  putHash(out, 24, offer.allHash);
  out[40] = offer.riderHoldsHead ? 1 : 0;
  std::copy(offer.cached.begin(), offer.cached.end(), out.begin() + kControlHeaderBytes);
  if (offer.joined) {
    // 0xff moves no byte's minimum. The shutdown and the stall check stay: rank 0 asks
    // for stall checks joined or not, and those find the rank that never joins.
    out[4] = 0xff;
    std::fill(out.begin() + 6, out.end(), std::uint8_t{0xff});
  }
  return out;
}

ControlAgreement decodeAgreement(std::span<const std::uint8_t> agreed) {
  ControlAgreement a;
  std::uint32_t shutdown = 0;
  for (int i = 0; i < 4; ++i) shutdown = (shutdown << 8) | agreed[static_cast<size_t>(i)];
  a.shutdownRank = shutdown == 0xffffffffu ? -1 : static_cast<int>(shutdown);
  a.anyAnnouncements = agreed[4] == 0;
  a.stallCheck = agreed[5] == 0;
  a.unnamedMin = agreed[6];
  a.unnamedMax = 255u - agreed[7];
  a.headsAgree = hashesAgree(agreed, 8);
  a.allAgree = hashesAgree(agreed, 24);
  a.ridersHoldHeads = agreed[40] == 1;
  for (size_t i = kControlHeaderBytes; i < agreed.size(); ++i) a.cachedEverywhere.push_back(agreed[i] == 1);
  return a;
}

}  // namespace hvd::engine
