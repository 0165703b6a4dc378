// runtime/common/hmac_test.cc: RFC 4231's known answers against libcrypto, and hex text.
#include "runtime/common/hmac.h"

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <string>

#include "runtime/common/hex.h"

namespace {

std::string hex(const hvd::HmacDigest& d) { return hvd::toHex(d.data(), d.size()); }

}  // namespace

TEST_CASE("HMAC-SHA-256 matches RFC 4231's known answers", "[unit]") {
  CHECK(hex(hvd::hmacSha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hex(hvd::hmacSha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hex(hvd::hmacSha256(std::string(20, '\xaa'), std::string(50, '\xdd'))) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string counting;
  for (char c = 1; c <= 25; ++c) counting += c;
  CHECK(hex(hvd::hmacSha256(counting, std::string(50, '\xcd'))) ==
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  CHECK(hex(hvd::hmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(hex(hvd::hmacSha256(std::string(131, '\xaa'),
                            "This is a test using a larger than block-size key and a larger than block-size data. "
                            "The key needs to be hashed before being used by the HMAC algorithm.")) ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("tags compare equal only when every byte matches", "[unit]") {
  auto a = hvd::hmacSha256("k", "a"), b = hvd::hmacSha256("k", "a");
  auto otherMessage = hvd::hmacSha256("k", "b"), otherKey = hvd::hmacSha256("K", "a");
  CHECK(hvd::constantTimeEqual(a, b));
  CHECK_FALSE(hvd::constantTimeEqual(a, otherMessage));
  CHECK_FALSE(hvd::constantTimeEqual(a, otherKey));
  auto lastByte = a;
  lastByte.back() ^= 1;
  CHECK_FALSE(hvd::constantTimeEqual(a, lastByte));
}

TEST_CASE("the crypto library names itself for --check-build", "[unit]") {
  CHECK(hvd::cryptoLibraryVersion().rfind("OpenSSL ", 0) == 0);
}

TEST_CASE("hex text has two lowercase digits per byte, and random hex differs each time", "[unit]") {
  const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  CHECK(hvd::toHex(bytes, sizeof bytes) == "000fa5ff");
  auto a = hvd::randomHex(32), b = hvd::randomHex(32);
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(a->size() == 64);
  CHECK(a->find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(*a != *b);
}

TEST_CASE("a process that exits while another of its threads computes HMACs ends cleanly, 40 times", "[unit]") {
  // A task shim's watcher thread may be mid-handshake as the rank ends and the shim exits:
  // libcrypto must not free its state under that thread (no atexit clean-up).
  int crashed = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::fflush(nullptr);  // the child's exit flushes what it inherited
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      (void)hvd::hmacSha256("k", "warm up");
      std::thread([] {
        for (;;) (void)hvd::hmacSha256(std::string(64, 'k'), std::string(4096, 'm'));
      }).detach();
      ::usleep(static_cast<useconds_t>(200 + 100 * (trial % 10)));
      std::exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++crashed;
  }
  CHECK(crashed == 0);
}
