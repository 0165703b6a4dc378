// runtime/rendezvous/protocol_test.cc: the values ranks leave for hvdrun in the store.
#include <catch2/catch.hpp>

#include "runtime/rendezvous/protocol.h"

using hvd::rendezvous::ElasticIdentity;
using hvd::rendezvous::formatElasticIdentity;
using hvd::rendezvous::parseElasticIdentity;
using hvd::rendezvous::parseGeneration;
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

TEST_CASE("an elastic identity reads back as written and nothing malformed reads as one", "[rendezvous]") {
  ElasticIdentity id{5, 6, 1, 2, 2, 3};
  CHECK(formatElasticIdentity(id) == "5 6 1 2 2 3");
  CHECK(parseElasticIdentity(formatElasticIdentity(id)) == std::optional<ElasticIdentity>(id));
  CHECK(parseElasticIdentity("0 1 0 1 0 1") == std::optional<ElasticIdentity>(ElasticIdentity{}));
  CHECK_FALSE(parseElasticIdentity(""));
  CHECK_FALSE(parseElasticIdentity("5 6 1 2 2"));
  CHECK_FALSE(parseElasticIdentity("5 6 1 2 2 3 "));
  CHECK_FALSE(parseElasticIdentity("5  6 1 2 2 3"));
  CHECK_FALSE(parseElasticIdentity("6 6 1 2 2 3"));   // rank outside the world
  CHECK_FALSE(parseElasticIdentity("5 6 2 2 2 3"));   // local rank outside its host
  CHECK_FALSE(parseElasticIdentity("5 6 1 2 -1 3"));
}

TEST_CASE("a generation is a number from 0", "[rendezvous]") {
  CHECK(parseGeneration("0") == std::optional<long long>(0));
  CHECK(parseGeneration("12") == std::optional<long long>(12));
  CHECK_FALSE(parseGeneration("-1"));
  CHECK_FALSE(parseGeneration("1x"));
  CHECK_FALSE(parseGeneration(""));
}
