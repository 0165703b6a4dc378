// runtime/common/sha256_test.cc: published test vectors (FIPS 180-4 examples, RFC 4231).
#include "runtime/common/sha256.h"

#include <catch2/catch.hpp>

#include <string>

#include "runtime/common/hex.h"

namespace {

std::string hex(const hvd::Sha256Digest& d) { return hvd::toHex(d.data(), d.size()); }

}  // namespace

TEST_CASE("SHA-256 matches the published digests", "[unit]") {
  CHECK(hex(hvd::sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(hvd::sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex(hvd::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(hvd::sha256(std::string(1000000, 'a'))) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("HMAC-SHA-256 matches RFC 4231", "[unit]") {
  CHECK(hex(hvd::hmacSha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hex(hvd::hmacSha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hex(hvd::hmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("digests compare equal only when every byte matches", "[unit]") {
  auto a = hvd::sha256("a"), b = hvd::sha256("a"), c = hvd::sha256("b");
  CHECK(hvd::constantTimeEqual(a, b));
  CHECK_FALSE(hvd::constantTimeEqual(a, c));
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
