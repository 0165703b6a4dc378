// cli/rendezvous/intruder_tally_test.cc: what is said of intruders, and when.
#include "cli/rendezvous/intruder_tally.h"

#include <catch2/catch.hpp>

namespace hvd::cli {

TEST_CASE("each kind of intruder is named the first time only, and early closes only from a storm on", "[unit]") {
  IntruderTally tally;
  CHECK(tally.note(Intrusion::kWrongSecret, "10.0.0.9:4000") ==
        "refused a client from 10.0.0.9:4000: it does not hold the job's secret");
  CHECK_FALSE(tally.note(Intrusion::kWrongSecret, "10.0.0.9:4001"));
  CHECK(tally.note(Intrusion::kOversized, "10.0.0.9:4002", 70000) ==
        "refused a client from 10.0.0.9:4002: it announced a frame of 70000 bytes before proving itself (not a "
        "client of hvdrun's)");
  for (size_t i = 1; i < IntruderTally::kClosedEarlyStorm; ++i) CHECK_FALSE(tally.note(Intrusion::kClosedEarly, "p"));
  CHECK(tally.note(Intrusion::kClosedEarly, "10.0.0.9:4003") ==
        "20 connections closed before their handshake, the last from 10.0.0.9:4003 (a connect-and-close storm, or a "
        "port scan?); counting on");
  CHECK_FALSE(tally.note(Intrusion::kClosedEarly, "p"));
  CHECK(tally.noteShed(3, std::chrono::milliseconds(1000)).has_value());
  CHECK_FALSE(tally.note(Intrusion::kSilent, "p", 0, std::chrono::milliseconds(10000)));  // named by the shed line
  CHECK(tally.count(Intrusion::kSilent) == 4);
  CHECK(tally.summary() == "28 connection(s) that were not the job's ranks refused or dropped in all: 2 without the "
                           "job's secret, 1 that announced oversized frames, 4 that stayed silent, 21 that closed "
                           "before their handshake");
}

TEST_CASE("a rank or two killed while connecting makes no total, and one intruder needs none", "[unit]") {
  IntruderTally tally;
  (void)tally.note(Intrusion::kClosedEarly, "p");
  (void)tally.note(Intrusion::kClosedEarly, "p");
  CHECK_FALSE(tally.summary());
  CHECK(tally.note(Intrusion::kNotAProof, "10.0.0.9:4000", 5).has_value());
  CHECK_FALSE(tally.summary());  // its own line said it all
}

}  // namespace hvd::cli
