// cli/rendezvous/intruder_tally.cc: the words for each kind of intruder.
#include "cli/rendezvous/intruder_tally.h"

#include <fmt/format.h>

namespace hvd::cli {
namespace {

// How each kind reads in the total.
constexpr std::array<const char*, kIntrusionKinds> kInTotal{
    "without the job's secret", "that sent no proof (garbage)", "that announced oversized frames",
    "that stayed silent", "that closed before their handshake"};

}  // namespace

std::optional<std::string> IntruderTally::note(Intrusion kind, const std::string& peer, size_t detail,
                                               std::chrono::milliseconds handshake) {
  const size_t n = ++counts_[static_cast<size_t>(kind)];
  switch (kind) {
    case Intrusion::kWrongSecret:
      if (n == 1) return fmt::format("refused a client from {}: it does not hold the job's secret", peer);
      break;
    case Intrusion::kNotAProof:
      if (n == 1) {
        return fmt::format("refused a client from {}: it answered the challenge with {} byte(s) that are no proof "
                           "(not a client of hvdrun's)",
                           peer, detail);
      }
      break;
    case Intrusion::kOversized:
      if (n == 1) {
        return fmt::format("refused a client from {}: it announced a frame of {} bytes before proving itself "
                           "(not a client of hvdrun's)",
                           peer, detail);
      }
      break;
    case Intrusion::kSilent:
      if (n == 1) {
        return fmt::format("dropped a connection from {} that sent nothing within {} ms of connecting", peer,
                           handshake.count());
      }
      break;
    case Intrusion::kClosedEarly:
      if (n == kClosedEarlyStorm) {
        return fmt::format("{} connections closed before their handshake, the last from {} (a connect-and-close "
                           "storm, or a port scan?); counting on",
                           n, peer);
      }
      break;
  }
  return std::nullopt;
}

std::optional<std::string> IntruderTally::noteShed(size_t count, std::chrono::milliseconds silentFor) {
  const size_t before = counts_[static_cast<size_t>(Intrusion::kSilent)].fetch_add(count);
  if (before != 0) return std::nullopt;
  return fmt::format("dropped {} connection(s) that sent nothing for {} ms, to make room (descriptors or handshakes "
                     "ran out: a flood, or a port scan?)",
                     count, silentFor.count());
}

std::optional<std::string> IntruderTally::summary() const {
  size_t total = 0;
  std::string kinds;
  for (size_t k = 0; k < kIntrusionKinds; ++k) {
    size_t n = counts_[k].load();
    // A few early closes are ranks killed while connecting, not intruders.
    if (k == static_cast<size_t>(Intrusion::kClosedEarly) && n < kClosedEarlyStorm) continue;
    if (n == 0) continue;
    total += n;
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kInTotal[k]);
  }
  if (total < 2) return std::nullopt;
  return fmt::format("{} connection(s) that were not the job's ranks refused or dropped in all: {}", total, kinds);
}

}  // namespace hvd::cli
