// slurm/count_list_test.cc: SLURM_TASKS_PER_NODE-style lists.
#include "slurm/count_list.h"

#include <catch2/catch.hpp>

#include <random>

using hvd::slurm::parseCountList;

TEST_CASE("run-length counts expand in order", "[unit][slurm]") {
  CHECK(*parseCountList("2(x3),1", "SLURM_TASKS_PER_NODE") == std::vector<int>{2, 2, 2, 1});
  CHECK(*parseCountList("4,1(x2)", "T") == std::vector<int>{4, 1, 1});
  CHECK(*parseCountList("3", "T") == std::vector<int>{3});
  CHECK(*parseCountList("0(x2),1", "T", 0) == std::vector<int>{0, 0, 1});
}

TEST_CASE("generated count lists round-trip through their text", "[unit][slurm]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int> expected;
    std::string text;
    int items = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < items; ++i) {
      int count = 1 + static_cast<int>(rng() % 64);
      int repeat = 1 + static_cast<int>(rng() % 5);
      text += (i ? "," : "") + std::to_string(count) + (repeat > 1 || rng() % 3 == 0 ? "(x" + std::to_string(repeat) + ")" : "");
      if (repeat == 1 && text.back() != ')') repeat = 1;
      expected.insert(expected.end(), static_cast<size_t>(repeat), count);
    }
    auto got = parseCountList(text, "T");
    INFO(text);
    REQUIRE(got.isOk());
    REQUIRE(*got == expected);
  }
}

TEST_CASE("malformed count lists name the variable and the item", "[unit][slurm]") {
  auto err = [](std::string_view text) { return parseCountList(text, "SLURM_TASKS_PER_NODE").status().message(); };
  CHECK(err("2(x3,1") == "SLURM_TASKS_PER_NODE='2(x3,1': item '2(x3' at position 1 is not N or N(xM) "
                        "(expected counts like 2(x3),1)");
  CHECK(err("2,a") == "SLURM_TASKS_PER_NODE='2,a': item 'a' at position 3 is not a whole number "
                     "(expected counts like 2(x3),1)");
  CHECK(err("2(x0)") == "SLURM_TASKS_PER_NODE='2(x0)': item '2(x0)' at position 1 has a repeat count that is not a "
                        "whole number of at least 1 (expected counts like 2(x3),1)");
  CHECK(err("0") == "SLURM_TASKS_PER_NODE='0': item '0' at position 1 is below the minimum of 1 "
                    "(expected counts like 2(x3),1)");
  CHECK(err("") == "SLURM_TASKS_PER_NODE is set but empty");
  CHECK(err("1,,2").find("item '' at position 3") != std::string::npos);
  CHECK(err("1(x99999999999)") == "SLURM_TASKS_PER_NODE='1(x99999999999)' describes more than 4194304 nodes");
}

TEST_CASE("a count list that does not match the node count is an error naming both", "[unit][slurm]") {
  auto counts = *parseCountList("2(x2)", "SLURM_TASKS_PER_NODE");
  CHECK(hvd::slurm::checkCountMatchesNodes(counts, "SLURM_TASKS_PER_NODE", 3, "SLURM_JOB_NODELIST").message() ==
        "SLURM_TASKS_PER_NODE describes 2 node(s) but SLURM_JOB_NODELIST lists 3");
}
