// cli/rendezvous/intruder_tally.h: what the rendezvous server says of connections that are
// not its ranks. Each kind is named on stderr the first time it happens (with the peer's
// address), and once more in a total when the job's server stops: a flood of them must not
// flood hvdrun's stderr too, and a single port scan must not go unseen.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace hvd::cli {

enum class Intrusion {
  kWrongSecret,  // answered the challenge with a proof made from another secret
  kNotAProof,    // answered with bytes that are no proof at all (garbage)
  kOversized,    // announced a frame longer than a handshake holds
  kSilent,       // sent nothing until its handshake's deadline, or until shed to make room
  kClosedEarly,  // closed before its handshake (a port scan; a rank killed while connecting)
};
inline constexpr size_t kIntrusionKinds = 5;

class IntruderTally {
 public:
  // Connections closed before their handshake are named only from this many on: one is a
  // rank killed while it connected, a storm is someone's.
  static constexpr size_t kClosedEarlyStorm = 20;

  // Counts one; the line to print now (without "hvdrun: warning: rendezvous: " and the
  // newline), the first of each kind: `peer` is its address, `detail` the bytes a
  // frame announced (kOversized) or the answer held (kNotAProof), `handshake` the
  // deadline a silent one missed.
  std::optional<std::string> note(Intrusion kind, const std::string& peer, size_t detail = 0,
                                  std::chrono::milliseconds handshake = {});
  // Connections that sent nothing shed at once to make room (a flood): one line the first
  // time, counted with the silent ones.
  std::optional<std::string> noteShed(size_t count, std::chrono::milliseconds silentFor);

  // The total, when more than one connection was refused or dropped: "5 connection(s) that
  // were not the job's ranks refused or dropped in all: 3 without the job's secret, ...".
  std::optional<std::string> summary() const;

  size_t count(Intrusion kind) const { return counts_[static_cast<size_t>(kind)].load(); }

 private:
  std::array<std::atomic<size_t>, kIntrusionKinds> counts_{};
};

}  // namespace hvd::cli
