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

std::string formatElasticIdentity(const ElasticIdentity& id) {
  std::string out;
  for (int n : {id.rank, id.size, id.localRank, id.localSize, id.crossRank, id.crossSize}) {
    out += (out.empty() ? "" : " ") + std::to_string(n);
  }
  return out;
}

std::optional<ElasticIdentity> parseElasticIdentity(std::string_view text) {
  int numbers[6] = {};
  const char* at = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 6; ++i) {
    if (i > 0 && (at == end || *at++ != ' ')) return std::nullopt;
    auto [next, ec] = std::from_chars(at, end, numbers[i]);
    if (ec != std::errc() || numbers[i] < 0) return std::nullopt;
    at = next;
  }
  if (at != end) return std::nullopt;
  ElasticIdentity id{numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5]};
  if (id.rank >= id.size || id.localRank >= id.localSize || id.crossRank >= id.crossSize) return std::nullopt;
  return id;
}

std::optional<long long> parseGeneration(std::string_view text) {
  long long g = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), g);
  if (ec != std::errc() || end != text.data() + text.size() || g < 0) return std::nullopt;
  return g;
}

std::string elasticNextKey(long long generation) { return "elastic/next/" + std::to_string(generation); }

std::string elasticIdentityKey(long long generation, int worker) {
  return "elastic/" + std::to_string(generation) + "/identity/" + std::to_string(worker);
}

std::string elasticJoinPrefix(long long generation) { return "elastic/" + std::to_string(generation) + "/join/"; }

std::string elasticFormedKey(long long generation) { return elasticJoinPrefix(generation) + "all-arrived"; }

std::string elasticArrivedKey(long long generation, int worker) {
  return elasticJoinPrefix(generation) + "arrived/" + std::to_string(worker);
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
