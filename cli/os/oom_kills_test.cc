// cli/os/oom_kills_test.cc: reading /proc/vmstat's OOM kill count.
#include "cli/os/oom_kills.h"

#include <catch2/catch.hpp>

using hvd::cli::oomKillsIn;

TEST_CASE("the OOM kill count is read from its own line of vmstat and nowhere else", "[unit]") {
  CHECK(oomKillsIn("nr_free_pages 12\noom_kill 7\npgfault 99\n") == 7u);
  CHECK(oomKillsIn("oom_kill 0") == 0u);
  CHECK_FALSE(oomKillsIn("nr_free_pages 12\nnot_oom_kill 3\n"));  // another counter's name ends alike
  CHECK_FALSE(oomKillsIn("oom_kill x\n"));
  CHECK_FALSE(oomKillsIn(""));
  CHECK(hvd::cli::kernelOomKills().has_value());  // Linux 4.13 and later have it
}
