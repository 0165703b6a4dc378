// runtime/rendezvous/protocol_test.cc: the values ranks leave for hvdrun in the store.
#include <catch2/catch.hpp>

#include "runtime/rendezvous/protocol.h"

using hvd::rendezvous::parsePeerGone;
using hvd::rendezvous::peerGoneKey;

TEST_CASE("a peer-gone report names a rank and anything else names none", "[rendezvous]") {
  CHECK(peerGoneKey(3) == "peer-gone/3");
  CHECK(parsePeerGone("0") == std::optional<int>(0));
  CHECK(parsePeerGone("17") == std::optional<int>(17));
  CHECK_FALSE(parsePeerGone(""));
  CHECK_FALSE(parsePeerGone("-1"));
  CHECK_FALSE(parsePeerGone("3x"));
  CHECK_FALSE(parsePeerGone("x3"));
  CHECK_FALSE(parsePeerGone("99999999999"));
}
