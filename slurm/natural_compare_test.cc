// slurm/natural_compare_test.cc: natural order as Slurm's strnatcmp defines it.
#include "slurm/natural_compare.h"

#include <catch2/catch.hpp>

using hvd::slurm::naturalCompare;

TEST_CASE("numbers inside names compare by value", "[unit][hostlist]") {
  CHECK(naturalCompare("a2", "a10") < 0);
  CHECK(naturalCompare("a10", "a9") > 0);
  CHECK(naturalCompare("a10b", "a9b") > 0);
  CHECK(naturalCompare("rack2-n1", "rack10-n1") < 0);
  CHECK(naturalCompare("x", "x") == 0);
  CHECK(naturalCompare("", "") == 0);
  CHECK(naturalCompare("a", "") > 0);
}

TEST_CASE("runs with leading zeros compare digit by digit like fractions", "[unit][hostlist]") {
  CHECK(naturalCompare("a01", "a1") < 0);
  CHECK(naturalCompare("a010", "a09") < 0);  // 0.10 < 0.9
  CHECK(naturalCompare("a001", "a01") < 0);
}

TEST_CASE("whitespace is skipped", "[unit][hostlist]") {
  CHECK(naturalCompare("a 1", "a1") == 0);
  CHECK(naturalCompare("  b", "b") == 0);
}
