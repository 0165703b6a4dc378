// cli/launch/elastic_gpus_test.cc: the GPUs of ranks an elastic job adds.
#include "cli/launch/elastic_gpus.h"

#include <catch2/catch.hpp>

using hvd::cli::ElasticGpus;

TEST_CASE("an added rank takes the first device no running rank holds and sees the host's in local-rank order",
          "[unit]") {
  ElasticGpus gpus({"3", "5", "6", "7"}, {{0, "3"}, {1, "5"}}, true);
  auto seen = gpus.give(2, {0, 1, 2});
  REQUIRE(seen);
  CHECK(seen->own == "6");
  CHECK(seen->visible == std::vector<std::string>{"3", "5", "6"});
  CHECK(seen->localGpu == 2);
  // Worker 0 failed; worker 3 comes after 1 and 2, and takes the device 0 left.
  auto next = gpus.give(3, {1, 2, 3});
  REQUIRE(next);
  CHECK(next->own == "3");
  CHECK(next->visible == std::vector<std::string>{"5", "6", "3"});
  CHECK(next->localGpu == 2);
}

TEST_CASE("an added rank sees its own GPU alone where the plan's ranks do and gets none when all are held", "[unit]") {
  ElasticGpus alone({"0", "1"}, {{0, "0"}}, false);
  auto seen = alone.give(1, {0, 1});
  REQUIRE(seen);
  CHECK(seen->visible == std::vector<std::string>{"1"});
  CHECK(seen->localGpu == 0);
  CHECK_FALSE(alone.give(2, {0, 1, 2}));
}
