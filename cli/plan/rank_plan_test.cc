// cli/plan/rank_plan_test.cc: block placement, checked as properties over many shapes.
#include "cli/plan/rank_plan.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

using hvd::cli::HostSlots;
using hvd::cli::placeRanks;

TEST_CASE("ranks fill hosts in order, contiguous per host, over many generated allocations", "[unit]") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 2000; ++trial) {
    int hosts = 1 + static_cast<int>(rng() % 8);
    std::vector<HostSlots> alloc;
    int total = 0;
    for (int h = 0; h < hosts; ++h) {
      int slots = static_cast<int>(rng() % 5);  // zero-slot hosts occur too
      alloc.push_back({"node" + std::to_string(h), slots});
      total += slots;
    }
    if (total == 0) continue;
    int np = 1 + static_cast<int>(rng() % total);
    auto plan = placeRanks(alloc, np);
    REQUIRE(plan.size() == static_cast<size_t>(np));
    std::map<std::string, std::vector<int>> localRanks;
    std::set<int> crossRanks;
    for (size_t i = 0; i < plan.size(); ++i) {
      const auto& r = plan[i];
      REQUIRE(r.rank == static_cast<int>(i));  // every rank exactly once, in order
      REQUIRE(r.size == np);
      localRanks[r.host].push_back(r.localRank);
      crossRanks.insert(r.crossRank);
      if (i > 0) REQUIRE(plan[i - 1].crossRank <= r.crossRank);  // contiguous per host
    }
    for (const auto& [host, locals] : localRanks) {
      for (size_t k = 0; k < locals.size(); ++k) REQUIRE(locals[k] == static_cast<int>(k));  // dense
    }
    for (const auto& r : plan) {
      REQUIRE(r.localSize == static_cast<int>(localRanks[r.host].size()));
      REQUIRE(r.crossSize == static_cast<int>(crossRanks.size()));
    }
  }
}

TEST_CASE("a rank's environment carries Horovod, hvdrun and torch names with the same values", "[unit]") {
  auto plan = placeRanks({{"a", 2}, {"b", 3}}, 4);
  auto env = hvd::cli::rankEnvironment(plan[3]);
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  CHECK(has("HOROVOD_RANK=3"));
  CHECK(has("HVD_RANK=3"));
  CHECK(has("RANK=3"));
  CHECK(has("HOROVOD_LOCAL_RANK=1"));
  CHECK(has("LOCAL_WORLD_SIZE=2"));
  CHECK(has("HOROVOD_CROSS_RANK=1"));
  CHECK(has("GROUP_RANK=1"));
  CHECK(has("GROUP_WORLD_SIZE=2"));
  CHECK(has("ROLE_RANK=3"));
  CHECK(has("ROLE_WORLD_SIZE=4"));
  CHECK(has("ROLE_NAME=default"));
  CHECK(has("TORCHELASTIC_RESTART_COUNT=0"));
  CHECK(has("TORCHELASTIC_MAX_RESTARTS=0"));
  CHECK(has("TORCHELASTIC_RUN_ID=none"));
  CHECK(has("HOROVOD_HOSTNAME=b"));
  CHECK(has("WORLD_SIZE=4"));
}
