// runtime/engine/control_message.h: the bytes every rank contributes to a cycle's one
// control allreduce (CollectiveBackend::agree, a byte-wise minimum), and what the minimum
// says. Minimum of 0/1 flags is AND; of complemented flags, OR; a value and its complement
// give both the minimum and the maximum, so "all equal" costs two fields. Layout:
//   [0,4)   shutdown: this rank's number big-endian if it asks to shut down, else ~0
//   [4]     1 - has announcements          -> someone has new names to announce
//   [5]     1 - wants a stall check        -> rank 0's stall timer fired
//   [6]     unnamed requests pending (<=255), [7] 255 - that  -> their min and max
//   [8,24)  hash of the first unnamed request, then its complement
//   [24,40) hash of all pending unnamed requests, then its complement
//   [40]    1 = this rank's rider holds its first unnamed request  -> AND: the rider's
//           result is that request's (collective_backend.h: CollectiveBackend::Rider)
//   [41,..) one byte per response-cache slot: 1 = this rank has that request pending
// A rank that joined (Engine::submitJoin) offers the neutral byte of every field but the
// shutdown and the stall check, so the minimum is that of the ranks still working.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hvd::engine {

struct ControlOffer {
  int shutdownRank = -1;  // this rank, when it asks the job's engines to stop
  bool hasAnnouncements = false;
  bool wantsStallCheck = false;
  unsigned unnamedCount = 0;  // capped at 255 by encode
  std::uint64_t headHash = 0, allHash = 0;
  bool riderHoldsHead = false;
  std::vector<std::uint8_t> cached;  // per cache slot: 1 when this rank has it pending
  bool joined = false;  // every field but shutdownRank and wantsStallCheck is then left out
};

struct ControlAgreement {
  int shutdownRank = -1;  // the lowest rank that asked; -1 when none did
  bool anyAnnouncements = false;
  bool stallCheck = false;
  unsigned unnamedMin = 0, unnamedMax = 0;
  bool headsAgree = false, allAgree = false;
  bool ridersHoldHeads = false;  // every rank's rider held its first unnamed request
  std::vector<bool> cachedEverywhere;  // per slot
};

inline constexpr size_t kControlHeaderBytes = 41;

std::vector<std::uint8_t> encodeOffer(const ControlOffer& offer);
// `agreed` is the byte-wise minimum over every rank's encodeOffer (of equal lengths).
ControlAgreement decodeAgreement(std::span<const std::uint8_t> agreed);

}  // namespace hvd::engine
