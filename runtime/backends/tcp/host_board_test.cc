// runtime/backends/tcp/host_board_test.cc: the shared count, through a real memfd reopened by
// its handle, and the exchange that finds local rank 0's board, ranks as calls on one store.
#include "runtime/backends/tcp/host_board.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "tests/support/memory_store.h"

using namespace std::chrono_literals;
using hvd::backends::tcp::BoardPlace;
using hvd::backends::tcp::HostBoard;

TEST_CASE("a board opened by its handle shares one count with the board that made it", "[unit]") {
  std::string handle;
  auto maker = HostBoard::create(&handle);
  REQUIRE(maker.isOk());
  auto other = HostBoard::open(handle);
  REQUIRE(other.isOk());
  (*other)->asleep();
  (*other)->asleep();
  CHECK((*maker)->sleeping() == 2);
  (*maker)->awake();
  CHECK((*other)->sleeping() == 1);
  // The handle names a descriptor the maker holds: gone with it.
  maker->reset();
  auto late = HostBoard::open(handle);
  REQUIRE_FALSE(late.isOk());
  CHECK(late.status().code() == hvd::Errc::kNotFound);
}

TEST_CASE("a board made with an arena shares those bytes zeroed and page-aligned with a board opened by its handle", "[unit]") {
  std::string handle;
  auto maker = HostBoard::create(&handle, 5000);
  REQUIRE(maker.isOk());
  auto other = HostBoard::open(handle);
  REQUIRE(other.isOk());
  auto mine = (*maker)->arena(), theirs = (*other)->arena();
  REQUIRE(mine.size() == 8192);  // whole pages
  REQUIRE(theirs.size() == mine.size());
  CHECK(reinterpret_cast<uintptr_t>(theirs.data()) % 4096 == 0);
  CHECK(std::all_of(theirs.begin(), theirs.end(), [](std::byte b) { return b == std::byte{0}; }));
  mine[4999] = std::byte{42};
  CHECK(theirs[4999] == std::byte{42});
  std::string plain;
  auto without = HostBoard::create(&plain);
  REQUIRE(without.isOk());
  CHECK((*without)->arena().empty());
  CHECK(HostBoard::inProcess(100)->arena().size() == 4096);
}

TEST_CASE("the ranks of a host meet on local rank 0s board and a host of one rank has none", "[unit]") {
  hvd::test::MemoryStore store;
  // Two hosts of two ranks each, block placement: ranks 0 and 1 on host 0, 2 and 3 on host 1.
  std::vector<BoardPlace> places = {{0, 0, 2, 0}, {1, 1, 2, 0}, {2, 0, 2, 1}, {3, 1, 2, 1}};
  std::vector<std::shared_ptr<HostBoard>> boards;
  for (const auto& place : places) {
    auto offered = offerHostBoard(store, place);
    REQUIRE(offered.isOk());
    CHECK((*offered != nullptr) == (place.localRank == 0));
    boards.push_back(*offered);
  }
  for (size_t r : {1u, 3u}) {
    auto joined = joinHostBoard(store, places[r], 1s);
    REQUIRE(joined.isOk());
    REQUIRE(*joined != nullptr);
    boards[r] = *joined;
  }
  boards[1]->asleep();
  boards[3]->asleep();
  boards[3]->asleep();
  CHECK(boards[0]->sleeping() == 1);
  CHECK(boards[2]->sleeping() == 2);
  // A host of one rank makes no board, but says so: another host's rank may take it for its
  // local rank 0 (next test).
  hvd::test::MemoryStore empty;
  BoardPlace alone{5, 0, 1, 3};
  auto none = offerHostBoard(empty, alone);
  REQUIRE(none.isOk());
  CHECK(*none == nullptr);
  auto said = empty.get("hvd.board/5", 0ms);
  REQUIRE(said.isOk());
  CHECK(*said == "3 0 -");
}

TEST_CASE("a rank that takes a one-rank host's rank for its local rank 0 learns at once that it is not", "[unit]") {
  // An elastic job grown onto a host that runs a rank already: worker 0 on host 0, worker 1
  // alone on host 1, the added worker 2 on host 0 as rank 2, local rank 1. It took rank 1 for
  // its local rank 0, which published nothing, and waited for it until the timeout (HVD_TIMEOUT)
  // while rank 0 waited in the ring for it: both failed, and the job with them.
  hvd::test::MemoryStore store;
  std::vector<BoardPlace> places = {{0, 0, 2, 0}, {1, 0, 1, 1}, {2, 1, 2, 0}};
  for (const auto& place : places) REQUIRE(offerHostBoard(store, place).isOk());
  auto start = std::chrono::steady_clock::now();
  auto joined = joinHostBoard(store, places[2], 5s);
  REQUIRE_FALSE(joined.isOk());
  CHECK(joined.status().message().find("placement other than block") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("ranks placed round robin go without a board and learn it at once", "[unit]") {
  hvd::test::MemoryStore store;
  // Ranks 0 and 2 on host 0, 1 and 3 on host 1: rank 2 takes rank 1 for its local rank 0
  // (host 1's), rank 3 takes rank 2 (host 0's second).
  std::vector<BoardPlace> places = {{0, 0, 2, 0}, {1, 0, 2, 1}, {2, 1, 2, 0}, {3, 1, 2, 1}};
  for (const auto& place : places) REQUIRE(offerHostBoard(store, place).isOk());
  for (size_t r : {2u, 3u}) {
    auto start = std::chrono::steady_clock::now();
    auto joined = joinHostBoard(store, places[r], 5s);
    INFO("rank " << r);
    REQUIRE_FALSE(joined.isOk());
    CHECK(joined.status().code() == hvd::Errc::kNotFound);
    CHECK(joined.status().message().find("placement other than block") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < 1s);
  }
}

TEST_CASE("the host's ranks count their cores together once all have joined and a quota caps them", "[unit]") {
  std::string handle;
  auto maker = HostBoard::create(&handle);
  REQUIRE(maker.isOk());
  auto other = HostBoard::open(handle);
  REQUIRE(other.isOk());
  // Three ranks bound to a core each (the third on a CPU past the first word).
  (*maker)->join({0}, std::nullopt);
  CHECK_FALSE((*other)->ranksCores(3).has_value());
  (*other)->join({1}, std::nullopt);
  CHECK_FALSE((*maker)->ranksCores(3).has_value());
  (*other)->join({70}, std::nullopt);
  CHECK((*maker)->ranksCores(3) == 3);
  CHECK((*other)->ranksCores(3) == 3);
  // Ranks that share their CPUs count them once; the smallest quota caps the count.
  auto shared = HostBoard::inProcess();
  shared->join({0, 1}, std::nullopt);
  shared->join({0, 1}, 4);
  shared->join({1, 0}, std::nullopt);
  CHECK(shared->ranksCores(3) == 2);
  auto capped = HostBoard::inProcess();
  capped->join({0, 1, 2, 3}, 3);
  capped->join({4, 5, 6, 7}, 2);
  CHECK(capped->ranksCores(2) == 2);
  // A rank that could not read its affinity leaves the count unknown.
  auto unknown = HostBoard::inProcess();
  unknown->join({0}, std::nullopt);
  unknown->join({}, std::nullopt);
  CHECK_FALSE(unknown->ranksCores(2).has_value());
}

TEST_CASE("ranks note the CPU they last ran on and learn whether another rank of the host ran on theirs", "[unit]") {
  std::string handle;
  auto maker = HostBoard::create(&handle);
  REQUIRE(maker.isOk());
  auto other = HostBoard::open(handle);
  REQUIRE(other.isOk());
  // Rank 0 has noted nothing: nothing to say.
  CHECK_FALSE((*maker)->cpuShared(0, 3).has_value());
  (*maker)->ranOn(0, 5);
  CHECK((*maker)->cpuShared(0, 3) == false);  // the others have noted nothing yet
  (*other)->ranOn(1, 6);
  CHECK((*maker)->cpuShared(0, 3) == false);
  (*other)->ranOn(2, 5);
  CHECK((*maker)->cpuShared(0, 3) == true);
  CHECK((*other)->cpuShared(1, 3) == false);
  // Rank 2 moves on: the last CPU counts.
  (*other)->ranOn(2, 7);
  CHECK((*maker)->cpuShared(0, 3) == false);
  // A seat past the host's ranks is not one of them; CPU 0 is a CPU like any other.
  (*other)->ranOn(3, 6);
  CHECK((*other)->cpuShared(1, 3) == false);
  (*maker)->ranOn(0, 0);
  (*other)->ranOn(1, 0);
  CHECK((*maker)->cpuShared(0, 2) == true);
  // Ranks past the board's seats are not tracked.
  (*other)->ranOn(HostBoard::kSeats, 0);
  CHECK_FALSE((*other)->cpuShared(HostBoard::kSeats, HostBoard::kSeats + 1).has_value());
}
