// runtime/common/hmac.cc: the one place that calls libcrypto.
#include "runtime/common/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace hvd {
namespace {

// libcrypto frees its global state in an atexit handler unless told not to. A process that
// exits while another of its threads is inside an HMAC (a task shim whose rank ended as its
// watcher thread asked the rendezvous something; a rank's runtime thread) would then crash in
// that thread, turning a clean end into SIGSEGV. The kernel frees the memory anyway.
void initCryptoOnce() {
  static const bool initialized = OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;
  (void)initialized;
}

}  // namespace

HmacDigest hmacSha256(std::string_view key, std::string_view message) {
  initCryptoOnce();
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

std::string cryptoLibraryVersion() {
  initCryptoOnce();
  return OpenSSL_version(OPENSSL_VERSION);
}

}  // namespace hvd
