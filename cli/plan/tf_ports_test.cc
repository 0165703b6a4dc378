// cli/plan/tf_ports_test.cc: derived TF_CONFIG port bases stay in range and spread jobs apart.
#include "cli/plan/tf_ports.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using hvd::cli::derivedTfPortBase;
using hvd::cli::kTfPortsPerNode;
using hvd::cli::PortRange;

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
  // 200 consecutive job ids over the 399 slots below Linux's ephemeral range: at random
  // about 157 would differ.
  CHECK(bases.size() > 150);
  CHECK(derivedTfPortBase("42", 1) != derivedTfPortBase("42", 2));
}

TEST_CASE("derived TF port bases stay out of the ephemeral range where outgoing connections take their ports", "[unit]") {
  // A base in the kernel's ephemeral range clashed with some connection's local port on a
  // node (the check then refused the launch: "TF_CONFIG port 45216 ... is in use").
  for (PortRange ephemeral : {PortRange{32768, 60999}, PortRange{40000, 50000}, PortRange{20000, 30000}}) {
    INFO("ephemeral " << ephemeral.first << "-" << ephemeral.last);
    std::set<int> bases;
    for (int job = 1; job < 2000; ++job) {
      int base = derivedTfPortBase(std::to_string(job), 3, ephemeral);
      bool clear = base + kTfPortsPerNode - 1 < ephemeral.first || base > ephemeral.last;
      CHECK(clear);
      CHECK(base >= 20000);
      CHECK(base + kTfPortsPerNode <= 60000);
      CHECK(base % kTfPortsPerNode == 0);
      bases.insert(base);
    }
    CHECK(bases.size() > 300);  // still spread over every slot left
  }
  // A range that leaves no slot (an administrator's 1024-65535): the whole span again.
  int base = derivedTfPortBase("7", 1, PortRange{1024, 65535});
  CHECK(base >= 20000);
  CHECK(base + kTfPortsPerNode <= 60000);
}
