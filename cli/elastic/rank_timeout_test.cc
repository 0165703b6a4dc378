// cli/elastic/rank_timeout_test.cc: hvdrun times frozen ranks by the HVD_TIMEOUT their
// runtime will use.
#include "cli/elastic/rank_timeout.h"

#include <catch2/catch.hpp>

#include <string>

using hvd::cli::rankTimeout;

namespace {

auto giving(const char* value) {
  return [value](const char* name) -> const char* { return std::string(name) == "HVD_TIMEOUT" ? value : nullptr; };
}

}  // namespace

TEST_CASE("the ranks' timeout is the one their environment gives, else the runtime's default", "[unit]") {
  CHECK(rankTimeout(giving("7")) == std::chrono::seconds(7));
  CHECK(rankTimeout(giving(nullptr)) == std::chrono::seconds(30));
  // What the runtime refuses (the ranks' init then fails saying so) counts as the default.
  CHECK(rankTimeout(giving("0")) == std::chrono::seconds(30));
  CHECK(rankTimeout(giving("soon")) == std::chrono::seconds(30));
  CHECK(rankTimeout(giving("100000")) == std::chrono::seconds(30));
}
