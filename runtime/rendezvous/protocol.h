// runtime/rendezvous/protocol.h: the rendezvous wire protocol, shared by hvdrun's server
// and the ranks' client. Every message is a frame (4-byte length, payload).
//   1. server -> client: "HVD-RDV1" + 32 random bytes (the challenge)
//   2. client -> server: HMAC-SHA-256(secret, kProofLabel + challenge), 32 bytes
//   3. server -> client: "OK" (a wrong proof gets no answer: the connection is closed)
//   4. requests: op byte, key length (4 bytes), key, value; replies: status byte, value
// The secret never crosses the wire; a client without it cannot read or write a key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::rendezvous {

inline constexpr std::string_view kGreeting = "HVD-RDV1";
inline constexpr std::string_view kProofLabel = "hvd-rendezvous-v1";
inline constexpr size_t kChallengeSize = 32;
inline constexpr size_t kMaxFrame = 16 << 20;

enum class Op : char {
  kSet = 'S',    // value stored under key; reply kOk
  kGet = 'G',    // value of key, waiting up to the timeout (value: 8-byte ms) for it
  kCheck = 'C',  // kOk when the key exists, else kMissing
  kAdd = 'A',    // key holds a decimal integer; adds value (decimal); reply: the new value
  // key claimed by value (who claims it) for the rest of the job: reply kOk when the key
  // was free or already holds value, else kTaken and the value that holds it.
  kClaim = 'L',
};

enum class Reply : char { kOk = 'K', kMissing = 'M', kTimeout = 'T', kError = 'E', kTaken = 'X' };

// Keys a rank sets to say it reached the rendezvous ("ready/<rank>" = host).
std::string readyKey(int rank);

// What a process joining as a rank claims first ("rank/<rank>" = "pid P on HOST"): one
// process holds a rank for the whole job (its own init() after shutdown() claims it again).
std::string rankClaimKey(int rank);

// Set by a rank whose collectives failed because another rank went (closed its connections,
// or shut hvd down): "peer-gone/<rank>" = that rank. hvdrun names the rank that went as the
// job's cause, however its peers' ends and its own reach hvdrun.
std::string peerGoneKey(int rank);
// The rank a peerGoneKey value names; nullopt for anything but a rank number.
std::optional<int> parsePeerGone(std::string_view value);

// Set by rank 0 when the ranks agreed on a preemption notice that reached them directly
// (scancel --signal=USR2 signals the job's steps, not hvdrun): hvdrun then requeues.
inline constexpr const char* kPreemptedKey = "preempted";

// Elastic training (hvdrun --min-np): the job's world goes through generations, 0 first,
// each a set of workers (HVD_ELASTIC_WORKER) that hvdrun numbers as ranks. hvdrun publishes
// a generation's identities before the one that points to it, and abandons the keys of the
// one it replaces, so a worker still joining that one fails at once and joins the next.
//   elasticNextKey(g) = "g'": the generation after g (g = -1: the job's first), or
//     kElasticEnded and why, when the job cannot go on without the rank that left g
//     (its ranks' init() fails at once, saying why, instead of waiting for a world)
//   elasticIdentityKey(g', w) = "rank size localRank localSize crossRank crossSize"
//   elasticJoinPrefix(g'): where generation g's ranks publish their addresses
//   elasticFormedKey(g'): set by the last of its ranks to arrive, before any goes on: a world
//     without it still waits for one (hvdrun ends it when that one finished instead)
//   elasticArrivedKey(g', w): set by worker w as it arrives (hvdrun stops the ones waiting
//     in a world that can no longer form)
struct ElasticIdentity {
  int rank = 0, size = 1, localRank = 0, localSize = 1, crossRank = 0, crossSize = 1;
  bool operator==(const ElasticIdentity&) const = default;
};
std::string formatElasticIdentity(const ElasticIdentity& identity);
// nullopt for anything but six numbers that describe a rank of a world.
std::optional<ElasticIdentity> parseElasticIdentity(std::string_view text);
// The generation an elasticNextKey names; nullopt for anything but a number from 0.
std::optional<long long> parseGeneration(std::string_view text);
std::string elasticNextKey(long long generation);
inline constexpr std::string_view kElasticEnded = "ended: ";
std::string elasticIdentityKey(long long generation, int worker);
std::string elasticJoinPrefix(long long generation);
std::string elasticFormedKey(long long generation);
std::string elasticArrivedKey(long long generation, int worker);

std::string encodeRequest(Op op, std::string_view key, std::string_view value);

}  // namespace hvd::rendezvous
