// runtime/backends/backend_registry_test.cc: the registry lists every backend once, and a
// backend that is not compiled in says why instead of probing.
#include <catch2/catch.hpp>

#include <set>

#include "runtime/backends/backend_probe.h"

using namespace hvd::backends;

TEST_CASE("the registry lists tcp, mpi, pmix, cuda and nccl exactly once, in that order", "[unit]") {
  std::vector<std::string> ids;
  for (const auto& e : registeredBackends()) ids.emplace_back(e.id);
  CHECK(ids == std::vector<std::string>{"tcp", "mpi", "pmix", "cuda", "nccl"});
}

TEST_CASE("every backend either probes or explains why it is not compiled in", "[unit]") {
  for (const auto& e : registeredBackends()) {
    INFO(std::string(e.id));
    if (e.compiled) {
      CHECK(e.probe != nullptr);
      BackendProbe p = probeBackend(e);
      CHECK_FALSE(p.buildVersion.empty());
      CHECK(p.usable == p.reason.empty());
    } else {
      CHECK(e.probe == nullptr);
      BackendProbe p = probeBackend(e);
      CHECK_FALSE(p.usable);
      CHECK(p.reason.find("built without") == 0);
    }
  }
  CHECK(findBackend("tcp") != nullptr);
  CHECK(findBackend("gloo") == nullptr);
}

TEST_CASE("the TCP backend is usable wherever loopback sockets work", "[unit]") {
  const BackendEntry* tcp = findBackend("tcp");
  REQUIRE(tcp != nullptr);
  BackendProbe p = probeBackend(*tcp);
  CHECK(p.usable);
}
