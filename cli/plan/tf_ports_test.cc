// cli/plan/tf_ports_test.cc: derived TF_CONFIG port bases stay in range and spread jobs apart.
#include "cli/plan/tf_ports.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using hvd::cli::derivedTfPortBase;
using hvd::cli::kTfPortsPerNode;

TEST_CASE("derived TF port bases are in range, aligned, repeatable, and differ between jobs and launches", "[unit]") {
  std::set<int> bases;
  for (int job = 1000; job < 1200; ++job) {
    int base = derivedTfPortBase(std::to_string(job), 7);
    CHECK(base >= 20000);
    CHECK(base + kTfPortsPerNode <= 60000);
    CHECK(base % kTfPortsPerNode == 0);
    CHECK(base == derivedTfPortBase(std::to_string(job), 7));
    bases.insert(base);
  }
  CHECK(bases.size() > 180);  // 200 consecutive job ids, 1,250 slots: few collisions
  CHECK(derivedTfPortBase("42", 1) != derivedTfPortBase("42", 2));
}
