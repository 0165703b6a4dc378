// runtime/rendezvous/protocol.cc: request encoding.
#include "runtime/rendezvous/protocol.h"

#include <charconv>

namespace hvd::rendezvous {

std::string readyKey(int rank) { return "ready/" + std::to_string(rank); }

std::string rankClaimKey(int rank) { return "rank/" + std::to_string(rank); }

std::string peerGoneKey(int rank) { return "peer-gone/" + std::to_string(rank); }

std::optional<int> parsePeerGone(std::string_view value) {
  int peer = -1;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), peer);
  if (ec != std::errc() || end != value.data() + value.size() || peer < 0) return std::nullopt;
  return peer;
}

std::string encodeRequest(Op op, std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(5 + key.size() + value.size());
  out += static_cast<char>(op);
  uint32_t n = static_cast<uint32_t>(key.size());
  out += {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
  out += key;
  out += value;
  return out;
}

}  // namespace hvd::rendezvous
