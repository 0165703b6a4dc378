// cli/elastic/elastic_world_test.cc: the generations an elastic job's workers join.
#include "cli/elastic/elastic_world.h"

#include <catch2/catch.hpp>

#include "runtime/rendezvous/protocol.h"

using hvd::cli::ElasticWorld;
namespace rdv = hvd::rendezvous;

namespace {

rdv::ElasticIdentity identityIn(const ElasticWorld::Keys& keys, long long generation, int worker) {
  auto it = keys.values.find(rdv::elasticIdentityKey(generation, worker));
  REQUIRE(it != keys.values.end());
  auto id = rdv::parseElasticIdentity(it->second);
  REQUIRE(id);
  return *id;
}

}  // namespace

TEST_CASE("the first world is every worker ranked as started and points from before the first", "[unit]") {
  ElasticWorld world({"a", "a", "b", "b"}, 2, -1);
  auto keys = world.firstWorld();
  CHECK(keys.abandonPrefix.empty());
  CHECK(keys.values.at(rdv::elasticNextKey(-1)) == "0");
  CHECK(identityIn(keys, 0, 0) == rdv::ElasticIdentity{0, 4, 0, 2, 0, 2});
  CHECK(identityIn(keys, 0, 3) == rdv::ElasticIdentity{3, 4, 1, 2, 1, 2});
  CHECK(keys.values.size() == 5);
}

TEST_CASE("a failed worker's peers are renumbered in order and the world it left is abandoned", "[unit]") {
  ElasticWorld world({"a", "a", "b", "b"}, 2, -1);
  auto change = world.workerFailed(1);
  REQUIRE(change.goesOn);
  CHECK(world.generation() == 1);
  CHECK(world.running() == std::vector<int>{0, 2, 3});
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(0));
  CHECK(change.keys.values.at(rdv::elasticNextKey(0)) == "1");
  CHECK_FALSE(change.keys.values.count(rdv::elasticIdentityKey(1, 1)));
  CHECK(identityIn(change.keys, 1, 0) == rdv::ElasticIdentity{0, 3, 0, 1, 0, 2});
  CHECK(identityIn(change.keys, 1, 2) == rdv::ElasticIdentity{1, 3, 0, 2, 1, 2});
  CHECK(identityIn(change.keys, 1, 3) == rdv::ElasticIdentity{2, 3, 1, 2, 1, 2});
}

TEST_CASE("a host's last worker failing takes the host out of the cross ranks", "[unit]") {
  ElasticWorld world({"a", "b", "c"}, 1, -1);
  REQUIRE(world.workerFailed(1).goesOn);
  auto change = world.workerFailed(0);
  REQUIRE(change.goesOn);
  CHECK(world.generation() == 2);
  CHECK(identityIn(change.keys, 2, 2) == rdv::ElasticIdentity{0, 1, 0, 1, 0, 1});
  CHECK(change.keys.values.at(rdv::elasticNextKey(1)) == "2");
}

TEST_CASE("a worker that finishes in a formed world leaves it without a new generation and the world grows no more",
          "[unit]") {
  ElasticWorld world({"a", "a", "a"}, 3, -1);
  auto change = world.workerFinished(2, 0, {});
  CHECK(change.goesOn);
  CHECK(change.keys.values.empty());
  CHECK(change.stop.empty());
  CHECK(world.generation() == 0);
  CHECK(world.size() == 2);
  CHECK(world.finishing());
  CHECK(world.addWorkers({"a"}).workers.empty());
  CHECK(world.generation() == 0);
}

TEST_CASE("a worker that finishes before the world grown for it formed ends that world and stops the workers added",
          "[unit]") {
  ElasticWorld world({"a", "a"}, 1, -1);
  REQUIRE(world.addWorkers({"a", "b"}).workers == std::vector<int>{2, 3});
  auto change = world.workerFinished(0, 0, {});
  CHECK_FALSE(change.goesOn);
  CHECK(change.why == "rank 0 finished (exit 0) before the job's world 1 formed");
  CHECK(change.stop == std::vector<int>{2, 3});
  CHECK(change.keys.values.at(rdv::elasticNextKey(1)) == std::string(rdv::kElasticEnded) + change.why);
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(1));
  CHECK(world.ended());
  // The worker still running from world 0 finishes by itself; nothing more changes.
  auto next = world.workerFinished(1, 0, {});
  CHECK(next.keys.values.empty());
  CHECK(next.stop.empty());
}

TEST_CASE("a worker that finishes before a re-formed world formed stops the workers waiting there and no other",
          "[unit]") {
  ElasticWorld world({"a", "a", "a"}, 1, -1);
  REQUIRE(world.addWorkers({"a"}).workers == std::vector<int>{3});  // world 1, which forms
  REQUIRE(world.workerFailed(1).goesOn);                            // world 2: 0, 2, 3
  auto change = world.workerFinished(2, 1, {3});
  CHECK(change.why == "rank 2 finished (exit 0) before the job's world 2 formed");
  // Worker 3 arrived in world 2 and waits there; worker 0 still runs its own code (it is
  // told why the world will not form if it comes to join it).
  CHECK(change.stop == std::vector<int>{3});
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(2));
}

TEST_CASE("a worker that ends cleanly before the first world formed ends it and stops nobody", "[unit]") {
  ElasticWorld world({"a", "a"}, 1, -1);
  auto change = world.workerFinished(1, -1, {});
  CHECK_FALSE(change.goesOn);
  CHECK(change.why == "rank 1 ended (exit 0) without joining the job's first world");
  CHECK(change.stop.empty());
  CHECK(change.keys.values.at(rdv::elasticNextKey(0)) == std::string(rdv::kElasticEnded) + change.why);
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(0));
}

TEST_CASE("the world ends below the minimum and past the reset limit saying which", "[unit]") {
  ElasticWorld small({"a", "a", "a"}, 2, -1);
  REQUIRE(small.workerFailed(0).goesOn);
  auto below = small.workerFailed(1);
  CHECK_FALSE(below.goesOn);
  CHECK(below.why == "only 1 rank(s) would be left, fewer than --min-np 2");
  // The ranks left learn there is no next world, and why, instead of waiting for one.
  CHECK(below.keys.values.at(rdv::elasticNextKey(1)) == "ended: only 1 rank(s) would be left, fewer than --min-np 2");
  CHECK(below.keys.abandonPrefix == rdv::elasticJoinPrefix(1));
  CHECK(small.ended());
  CHECK_FALSE(small.workerFailed(2).goesOn);

  ElasticWorld limited({"a", "a", "a", "a"}, 1, 1);
  REQUIRE(limited.workerFailed(3).goesOn);
  auto limit = limited.workerFailed(2);
  CHECK_FALSE(limit.goesOn);
  CHECK(limit.why == "the world has changed 1 time(s) already (--reset-limit 1)");

  ElasticWorld none({"a", "a"}, 1, 0);
  CHECK_FALSE(none.workerFailed(0).goesOn);
}

// A host lost with its agent: every rank there ended at once, and Horovod counts one reset.
// Before, each was a world of its own: --reset-limit 1 ended the job at the host's second rank.
TEST_CASE("workers that fail together make one new world, counted once against the reset limit", "[unit]") {
  ElasticWorld world({"a", "a", "b", "b", "c", "c"}, 2, 1);
  auto change = world.workersFailed({4, 5});
  REQUIRE(change.goesOn);
  CHECK(world.generation() == 1);
  CHECK(world.running() == std::vector<int>{0, 1, 2, 3});
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(0));
  CHECK(identityIn(change.keys, 1, 3) == rdv::ElasticIdentity{3, 4, 1, 2, 1, 2});
  auto again = world.workersFailed({2, 3});  // a second host: past the limit
  CHECK_FALSE(again.goesOn);
  CHECK(again.why == "the world has changed 1 time(s) already (--reset-limit 1)");

  ElasticWorld few({"a", "b", "b"}, 2, -1);
  auto below = few.workersFailed({1, 2});
  CHECK_FALSE(below.goesOn);
  CHECK(below.why == "only 1 rank(s) would be left, fewer than --min-np 2");
  // One not running among them: the others still fail.
  ElasticWorld partly({"a", "a", "a"}, 1, -1);
  REQUIRE(partly.workerFailed(0).goesOn);
  auto rest = partly.workersFailed({0, 1});
  CHECK(rest.goesOn);
  CHECK(partly.running() == std::vector<int>{2});
  CHECK(partly.generation() == 2);
}

TEST_CASE("a worker that is not running changes nothing", "[unit]") {
  ElasticWorld world({"a", "a"}, 1, -1);
  REQUIRE(world.workerFailed(0).goesOn);
  auto again = world.workerFailed(0);
  CHECK_FALSE(again.goesOn);
  CHECK(world.generation() == 1);
  CHECK(world.size() == 1);
}

TEST_CASE("workers added while the job runs come after the running ones in the next world", "[unit]") {
  ElasticWorld world({"a", "a", "a"}, 2, -1);
  REQUIRE(world.workerFailed(1).goesOn);
  auto growth = world.addWorkers({"a", "b"});
  CHECK(growth.workers == std::vector<int>{3, 4});
  CHECK(growth.after == 1);
  CHECK(world.generation() == 2);
  CHECK(world.running() == std::vector<int>{0, 2, 3, 4});
  CHECK(world.runningOn("a") == 3);
  CHECK(world.runningOn("b") == 1);
  CHECK(growth.keys.values.at(rdv::elasticNextKey(1)) == "2");
  CHECK(growth.keys.abandonPrefix == rdv::elasticJoinPrefix(1));
  CHECK(identityIn(growth.keys, 2, 3) == rdv::ElasticIdentity{2, 4, 2, 3, 0, 2});
  CHECK(identityIn(growth.keys, 2, 4) == rdv::ElasticIdentity{3, 4, 0, 1, 1, 2});
  CHECK(growth.identities == std::vector<rdv::ElasticIdentity>{{2, 4, 2, 3, 0, 2}, {3, 4, 0, 1, 1, 2}});
  CHECK(world.hostOf(4) == "b");
  // A failure of an added worker is like any other's.
  REQUIRE(world.workerFailed(4).goesOn);
  CHECK(world.running() == std::vector<int>{0, 2, 3});
}

TEST_CASE("workers removed with their host leave for the next world unless too few would be left", "[unit]") {
  ElasticWorld world({"a", "a", "b", "b"}, 2, -1);
  auto change = world.workersRemoved({2, 3});
  REQUIRE(change.goesOn);
  CHECK(world.generation() == 1);
  CHECK(world.running() == std::vector<int>{0, 1});
  CHECK(identityIn(change.keys, 1, 1) == rdv::ElasticIdentity{1, 2, 1, 2, 0, 1});
  CHECK(change.keys.abandonPrefix == rdv::elasticJoinPrefix(0));
  auto refused = world.workersRemoved({1});
  CHECK_FALSE(refused.goesOn);
  CHECK(refused.why == "only 1 rank(s) would be left, fewer than --min-np 2");
  CHECK(refused.keys.values.empty());
  CHECK(world.running() == std::vector<int>{0, 1});  // they keep running
  CHECK_FALSE(world.workersRemoved({7}).goesOn);     // not running
}

TEST_CASE("no workers are added past the reset limit or after the job ended", "[unit]") {
  ElasticWorld limited({"a"}, 1, 0);
  CHECK(limited.addWorkers({"a"}).workers.empty());
  CHECK(limited.generation() == 0);
  ElasticWorld ended({"a", "a"}, 2, -1);
  CHECK_FALSE(ended.workerFailed(0).goesOn);
  CHECK(ended.addWorkers({"a"}).workers.empty());
}
