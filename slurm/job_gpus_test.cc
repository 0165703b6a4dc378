// slurm/job_gpus_test.cc: GPU indices per node from `scontrol show job -d`, using text a
// real Slurm 22.05 printed (tests/slurm/ checks the live output too).
#include "slurm/job_gpus.h"

#include <catch2/catch.hpp>

using hvd::slurm::parseJobGpus;
using Devices = std::vector<std::string>;

TEST_CASE("per-node GPU indices are read from the detail lines", "[unit][slurm]") {
  auto gpus = parseJobGpus(
      "JobId=1 JobName=interactive\n   NodeList=node[01-03]\n   JOB_GRES=gpu:5\n"
      "     Nodes=node[01-02] CPU_IDs=2-3 Mem=0 GRES=gpu:2(IDX:0-1)\n"
      "     Nodes=node03 CPU_IDs=2 Mem=0 GRES=gpu:1(IDX:0)\n");
  REQUIRE(gpus.isOk());
  CHECK(gpus->at("node01") == Devices{"0", "1"});
  CHECK(gpus->at("node02") == Devices{"0", "1"});
  CHECK(gpus->at("node03") == Devices{"0"});
}

TEST_CASE("typed GPUs, index lists and other resources are handled", "[unit][slurm]") {
  auto gpus = parseJobGpus("  Nodes=a1 CPU_IDs=0 Mem=0 GRES=gpu:a100:3(IDX:0,2-3),nic:1(IDX:0)\n"
                           "  Nodes=a2 CPU_IDs=0 Mem=0 GRES=\n");
  REQUIRE(gpus.isOk());
  CHECK(gpus->at("a1") == Devices{"0", "2", "3"});
  CHECK(gpus->at("a2").empty());
}

TEST_CASE("malformed GRES fields are errors quoting them", "[unit][slurm]") {
  CHECK(parseJobGpus("  Nodes=a1 GRES=gpu:2(IDX:0-x)\n").status().message() ==
        "GRES='gpu:2(IDX:0-x)': '0-x' is not a GPU index or range");
  CHECK(parseJobGpus("  Nodes=a1 GRES=gpu:2\n").status().message() ==
        "scontrol show job -d: GRES='gpu:2' has no (IDX:...) for its GPUs");
}
