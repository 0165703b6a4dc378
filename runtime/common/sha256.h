// runtime/common/sha256.h: SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), for the
// rendezvous handshake: a client proves it holds the job's secret without sending it.
// Not for bulk data; no dependency beyond the C++ standard library.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace hvd {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
Sha256Digest hmacSha256(std::string_view key, std::string_view message);

// Compares in time independent of where the inputs differ.
bool constantTimeEqual(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace hvd
