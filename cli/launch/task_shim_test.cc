// cli/launch/task_shim_test.cc
#include "cli/launch/task_shim.h"

#include <catch2/catch.hpp>

namespace hvd::cli {
namespace {

TaskEndReport exited(int rank, int code, bool told = false) { return {rank, TaskEnd{code, 0}, told}; }
TaskEndReport killed(int rank, int signal, bool told = false) { return {rank, TaskEnd{0, signal}, told}; }

}  // namespace

TEST_CASE("a task's end report reads back as it was written and anything else is refused", "[shim]") {
  for (const TaskEndReport& r : {exited(3, 1), killed(12, 9, true), exited(0, 143, true)}) {
    auto back = decodeTaskEndReport(encodeTaskEndReport(r));
    REQUIRE(back.has_value());
    CHECK(back->rank == r.rank);
    CHECK(back->end.exitCode == r.end.exitCode);
    CHECK(back->end.signal == r.end.signal);
    CHECK(back->toldToStop == r.toldToStop);
    CHECK(back->oomKillsOnHost == 0);
  }
  TaskEndReport oom = killed(5, 9);
  oom.oomKillsOnHost = 2;  // the OOM killer ran on the rank's node while it did
  CHECK(decodeTaskEndReport(encodeTaskEndReport(oom))->oomKillsOnHost == 2);
  CHECK(decodeTaskEndReport("5 0 9 0")->oomKillsOnHost == 0);  // an hvdrun from before the count
  for (const char* bad : {"", "3", "3 1 0", "3 1 0 2", "3 1 0 1 ", "-1 1 0 0", "3 x 0 0", "3  1 0 0", "99999999999 1 0 0",
                          "3 1 0 0 1 1", "3 1 0 0 x"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(decodeTaskEndReport(bad).has_value());
  }
}

TEST_CASE("a rank killed by a signal nobody sent its task is the cause even when a peer's error exit arrived first",
          "[shim]") {
  // Rank 2 saw rank 3's sockets close and exited 1; its shim reported before rank 3's.
  auto cause = rootCauseOf({exited(2, 1), killed(3, 9), killed(4, 15, true)});
  REQUIRE(cause.has_value());
  CHECK(cause->rank == 3);
  CHECK(cause->end.signal == 9);
}

TEST_CASE("the first error exit is the cause when no rank crashed, and ranks the launcher stopped never are", "[shim]") {
  // srun's --kill-on-bad-exit SIGTERMs the others: their shims hold SIGTERM too.
  auto cause = rootCauseOf({killed(1, 15, true), exited(5, 3), exited(0, 1), exited(4, 143, true)});
  REQUIRE(cause.has_value());
  CHECK(cause->rank == 5);
  CHECK(cause->end.exitCode == 3);
}

TEST_CASE("reports of stopped tasks alone name no cause and leave it to the launcher's messages", "[shim]") {
  CHECK_FALSE(rootCauseOf({killed(2, 15, true), killed(0, 15, true)}).has_value());
  CHECK_FALSE(rootCauseOf({}).has_value());
}

}  // namespace hvd::cli
