// runtime/common/hmac.cc: the one place that calls libcrypto.
#include "runtime/common/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace hvd {

HmacDigest hmacSha256(std::string_view key, std::string_view message) {
  HmacDigest out{};
  unsigned int length = 0;
  // The one-shot HMAC() cannot fail for SHA-256 with a key and message in memory; a null
  // return would mean libcrypto itself is broken, and an all-zero tag then matches nothing.
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &length);
  return out;
}

bool constantTimeEqual(const HmacDigest& a, const HmacDigest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string cryptoLibraryVersion() { return OpenSSL_version(OPENSSL_VERSION); }

}  // namespace hvd
