// runtime/common/hmac.h: HMAC-SHA-256 from OpenSSL's libcrypto, for the rendezvous
// handshake and the transports' peer checks: a process proves it holds the job's secret
// without sending it. The primitive comes from the library the field trusts, not from us.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hvd {

using HmacDigest = std::array<uint8_t, 32>;

HmacDigest hmacSha256(std::string_view key, std::string_view message);

// Compares in time independent of where the inputs differ (CRYPTO_memcmp), so a forger
// learns nothing from how long a refusal took.
bool constantTimeEqual(const HmacDigest& a, const HmacDigest& b);

// "OpenSSL 3.0.19 ..." as the loaded libcrypto reports it, for --check-build.
std::string cryptoLibraryVersion();

}  // namespace hvd
