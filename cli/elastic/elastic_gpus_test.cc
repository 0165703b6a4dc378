// cli/elastic/elastic_gpus_test.cc: the GPUs of ranks an elastic job adds.
#include "cli/elastic/elastic_gpus.h"

#include <catch2/catch.hpp>

using hvd::cli::ElasticGpus;

TEST_CASE("an added rank takes the first device no running rank holds and sees the host's in local-rank order",
          "[unit]") {
  ElasticGpus gpus({"3", "5", "6", "7"}, {{0, {"3"}}, {1, {"5"}}}, true, 1);
  auto seen = gpus.give(2, {0, 1, 2});
  REQUIRE(seen);
  CHECK(seen->own == std::vector<std::string>{"6"});
  CHECK(seen->visible == std::vector<std::string>{"3", "5", "6"});
  CHECK(seen->localGpu == 2);
  // Worker 0 failed; worker 3 comes after 1 and 2, and takes the device 0 left.
  auto next = gpus.give(3, {1, 2, 3});
  REQUIRE(next);
  CHECK(next->own == std::vector<std::string>{"3"});
  CHECK(next->visible == std::vector<std::string>{"5", "6", "3"});
  CHECK(next->localGpu == 2);
}

TEST_CASE("an added rank sees its own GPU alone where the plan's ranks do and gets none when all are held", "[unit]") {
  ElasticGpus alone({"0", "1"}, {{0, {"0"}}}, false, 1);
  auto seen = alone.give(1, {0, 1});
  REQUIRE(seen);
  CHECK(seen->visible == std::vector<std::string>{"1"});
  CHECK(seen->localGpu == 0);
  CHECK_FALSE(alone.give(2, {0, 1, 2}));
}

TEST_CASE("with several GPUs a rank an added rank takes as many free devices and sees them alone", "[unit]") {
  // --gpus-per-rank 2 on six devices: workers 0 and 1 hold 0,1 and 2,3.
  ElasticGpus gpus({"0", "1", "2", "3", "4", "5"}, {{0, {"0", "1"}}, {1, {"2", "3"}}}, false, 2);
  auto seen = gpus.give(2, {0, 1, 2});
  REQUIRE(seen);
  CHECK(seen->own == std::vector<std::string>{"4", "5"});
  CHECK(seen->visible == std::vector<std::string>{"4", "5"});
  CHECK(seen->localGpu == 0);
  // Nothing left for a fourth while the three run; worker 0's two once it has gone.
  CHECK_FALSE(gpus.give(3, {0, 1, 2, 3}));
  auto after = gpus.give(4, {1, 2, 4});
  REQUIRE(after);
  CHECK(after->own == std::vector<std::string>{"0", "1"});
  // One device free of the two a rank needs is not enough: none are given.
  ElasticGpus short3({"0", "1", "2"}, {{0, {"0", "1"}}}, false, 2);
  CHECK_FALSE(short3.give(1, {0, 1}));
}
