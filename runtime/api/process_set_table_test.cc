// runtime/api/process_set_table_test.cc: the book of process sets on its own: ids, refusals,
// the root and label translations, and the handle bits.
#include <catch2/catch.hpp>

#include "runtime/api/process_set_table.h"

using hvd::Errc;
using hvd::api::ProcessSetTable;

TEST_CASE("process set ids count from 1 and a repeat or the whole job is refused naming the set", "[unit]") {
  ProcessSetTable book;
  auto first = book.reserve({0, 2}, 4);
  REQUIRE(first);
  CHECK(*first == 1);
  book.insert(1, {{0, 2}, nullptr});
  auto second = book.reserve({1, 3}, 4);
  REQUIRE(second);
  CHECK(*second == 2);
  auto repeat = book.reserve({0, 2}, 4);
  REQUIRE_FALSE(repeat);
  CHECK(repeat.status().code() == Errc::kInvalidArgument);
  CHECK(repeat.status().message() == "add_process_set(0, 2): process set 1 has these ranks already");
  auto whole = book.reserve({0, 1, 2, 3}, 4);
  REQUIRE_FALSE(whole);
  CHECK(whole.status().message() ==
        "add_process_set(0, 1, 2, 3): process set 0 (the whole job) has these ranks already");
  CHECK(book.ids() == std::vector<int>{0, 1});
  CHECK(book.takeAll().size() == 1);
  CHECK(book.ids() == std::vector<int>{0});
  auto again = book.reserve({0, 2}, 4);
  REQUIRE(again);
  CHECK(*again == 1);  // a new runtime's sets count afresh
}

TEST_CASE("a set's runtime is refused to a non-member and an unknown id by name", "[unit]") {
  ProcessSetTable book;
  book.insert(3, {{1, 2, 5}, nullptr});
  auto outside = book.runtimeFor(3, 4);
  REQUIRE_FALSE(outside);
  CHECK(outside.status().code() == Errc::kInvalidUsage);
  CHECK(outside.status().message() == "rank 4 is not in process set 3 (ranks 1, 2, 5)");
  auto unknown = book.runtimeFor(7, 4);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.status().message() == "process set 7 does not exist");
  CHECK_FALSE(book.take(7));
  REQUIRE(book.take(3));
  CHECK_FALSE(book.ranksOf(3));
}

TEST_CASE("a broadcast root is a job rank translated to the set's and a failure gets the set's rank map", "[unit]") {
  ProcessSetTable book;
  book.insert(2, {{1, 2, 5}, nullptr});
  auto root = book.rootIn(2, 5);
  REQUIRE(root);
  CHECK(*root == 2);
  auto outside = book.rootIn(2, 0);
  REQUIRE_FALSE(outside);
  CHECK(outside.status().message() == "broadcast root 0 is not in process set 2 (ranks 1, 2, 5)");
  hvd::Status failed(Errc::kRemote, "rank 1 (127.0.0.1:1) closed its connection");
  CHECK(book.labelled(failed, 2).message() ==
        "in process set 2 (its ranks 0-2 are the job's ranks 1, 2, 5): rank 1 (127.0.0.1:1) closed its connection");
  CHECK(book.labelled(failed, 0).message() == failed.message());
  CHECK(book.labelled(hvd::Status::ok(), 2).isOk());
}

TEST_CASE("a handle keeps its set and the engine's number apart and the job's handles are unchanged", "[unit]") {
  using namespace hvd::api;
  for (int set : {0, 1, 17, 4000}) {
    for (std::int64_t id : {std::int64_t{1}, std::int64_t{123456789}, (std::int64_t{1} << 40) - 1}) {
      const hvd::Handle h = toHandle(set, id);
      CHECK(setOf(h) == set);
      CHECK(engineHandleOf(h) == id);
    }
  }
  CHECK(toHandle(0, 42) == 42);
}
