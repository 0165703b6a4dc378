// cli/plan/cpu_binding_test.cc: --bind-to's CPU lists from fake and real topologies.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli/os/cpu_topology.h"
#include "cli/plan/cpu_binding.h"

using hvd::cli::BindTo;
using hvd::cli::cpuBindings;
using hvd::cli::UsableCpu;

namespace {

// Two sockets of two cores with two threads each: CPUs 0-3 on socket 0 (core 0: 0 and 2,
// core 1: 1 and 3, the way Linux numbers siblings apart), 4-7 on socket 1.
std::vector<UsableCpu> twoSocketsSmt() {
  return {{0, 0, 0}, {1, 1, 0}, {2, 0, 0}, {3, 1, 0}, {4, 0, 1}, {5, 1, 1}, {6, 0, 1}, {7, 1, 1}};
}

using Lists = std::vector<std::vector<int>>;

}  // namespace

TEST_CASE("binding to core gives each local rank whole cores with their SMT siblings in equal blocks", "[unit][plan]") {
  CHECK(*cpuBindings(BindTo::kCore, 4, twoSocketsSmt()) == Lists{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(*cpuBindings(BindTo::kCore, 2, twoSocketsSmt()) == Lists{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(*cpuBindings(BindTo::kCore, 3, twoSocketsSmt()) == Lists{{0, 2}, {1, 3}, {4, 6}});  // core 4 stays unused
}

TEST_CASE("binding to core with more local ranks than usable cores is refused naming both counts", "[unit][plan]") {
  auto r = cpuBindings(BindTo::kCore, 5, twoSocketsSmt());
  REQUIRE(!r.isOk());
  CHECK(r.status().code() == hvd::Errc::kInvalidUsage);
  CHECK(r.status().message() == "--bind-to core: 5 ranks on this host, but hvdrun may use only 4 core(s) here (CPUs 0-7)");
  CHECK(r.status().hint().find("--bind-to none") != std::string::npos);
  CHECK(r.status().hint().find("--bind-to core:overload-allowed") != std::string::npos);
}

TEST_CASE("binding to core with overload allowed deals local ranks round robin over the cores when they outnumber them",
          "[unit][plan]") {
  // As mpirun -bind-to core:overload-allowed -map-by slot: ranks r and r + cores share a core,
  // neighbours in rank order do not.
  CHECK(*cpuBindings(BindTo::kCoreOverloadAllowed, 6, twoSocketsSmt()) ==
        Lists{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 2}, {1, 3}});
  std::vector<UsableCpu> twoCores{{0, 0, 0}, {1, 1, 0}};
  CHECK(*cpuBindings(BindTo::kCoreOverloadAllowed, 4, twoCores) == Lists{{0}, {1}, {0}, {1}});
}

TEST_CASE("binding to core with overload allowed is plain core binding while the cores suffice", "[unit][plan]") {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    CAPTURE(ranks);
    CHECK(*cpuBindings(BindTo::kCoreOverloadAllowed, ranks, twoSocketsSmt()) == *cpuBindings(BindTo::kCore, ranks, twoSocketsSmt()));
  }
}

TEST_CASE("binding to socket spreads local ranks over the sockets round robin", "[unit][plan]") {
  CHECK(*cpuBindings(BindTo::kSocket, 3, twoSocketsSmt()) == Lists{{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 2, 3}});
}

TEST_CASE("binding to none binds nobody and only the CPUs the process may use are given out", "[unit][plan]") {
  CHECK(*cpuBindings(BindTo::kNone, 2, twoSocketsSmt()) == Lists{{}, {}});
  // taskset -c 1,3,5 on the machine above: cores (0,1), (1,1)... as the affinity leaves them.
  std::vector<UsableCpu> some{{1, 1, 0}, {3, 1, 0}, {5, 1, 1}};
  CHECK(*cpuBindings(BindTo::kCore, 2, some) == Lists{{1, 3}, {5}});
}

TEST_CASE("binding values other than none core and socket are refused naming the value", "[unit][plan]") {
  auto r = hvd::cli::parseBindTo("cores");
  REQUIRE(!r.isOk());
  CHECK(r.status().message() == "--bind-to: 'cores' is not one of none, core, core:overload-allowed, socket");
  CHECK(*hvd::cli::parseBindTo("socket") == BindTo::kSocket);
  CHECK(*hvd::cli::parseBindTo("core:overload-allowed") == BindTo::kCoreOverloadAllowed);
  CHECK(hvd::cli::bindToName(BindTo::kCoreOverloadAllowed) == "core:overload-allowed");
  CHECK(!hvd::cli::parseBindTo("core:overload").isOk());
}

TEST_CASE("CPU lists are written as ranges the way taskset writes them", "[unit][plan]") {
  CHECK(hvd::cli::cpuListText({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(hvd::cli::cpuListText({}) == "");
}

TEST_CASE("the topology of a CPU comes from sysfs and a CPU without topology files is its own core", "[unit][plan]") {
  auto root = std::filesystem::temp_directory_path() / ("hvd-topology-" + std::to_string(::getpid()));
  auto put = [&](int cpu, int core, int socket) {
    auto dir = root / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "core_id") << core << "\n";
    std::ofstream(dir / "physical_package_id") << socket << "\n";
  };
  put(0, 0, 0);
  put(1, 4, 1);
  auto t = hvd::cli::cpuTopology({0, 1, 2}, root.string());
  std::filesystem::remove_all(root);
  REQUIRE(t.size() == 3);
  CHECK((t[1].cpu == 1 && t[1].core == 4 && t[1].socket == 1));
  CHECK((t[2].cpu == 2 && t[2].core == 0 && t[2].socket == 0));
}
