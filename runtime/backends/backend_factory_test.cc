// runtime/backends/backend_factory_test.cc: the rank side of the registry opens what the
// settings ask for, in order, and refuses settings it cannot honour.
#include <catch2/catch.hpp>

#include <map>

#include "runtime/backends/backend_factory.h"

using namespace hvd::backends;

namespace {

hvd::EnvSnapshot environment(std::map<std::string, std::string> vars) {
  auto env = hvd::EnvSnapshot::read([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  REQUIRE(env.isOk());
  return *env;
}

}  // namespace

TEST_CASE("a world of one opens the TCP backend alone, and it moves CPU tensors only", "[unit]") {
  auto env = environment({});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE(opened.isOk());
  REQUIRE(opened->size() == 1);
  CHECK((*opened)[0]->name() == "tcp");
  CHECK((*opened)[0]->supports(hvd::Device::kCpu));
  CHECK_FALSE((*opened)[0]->supports(hvd::Device::kCuda));
  float x[3] = {1, 2, 3};
  REQUIRE((*opened)[0]->allreduce(TensorRef{x, 3, hvd::DataType::kFloat32}, hvd::ReduceOp::kSum).isOk());
  CHECK(x[2] == 3);
}

TEST_CASE("the control path's agree is a byte-wise minimum, which for one rank changes nothing", "[unit]") {
  auto env = environment({});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE(opened.isOk());
  std::vector<std::uint8_t> bytes{0, 1, 255, 7};
  REQUIRE((*opened)[0]->agree(bytes).isOk());
  CHECK(bytes == std::vector<std::uint8_t>{0, 1, 255, 7});
}

TEST_CASE("an unknown HOROVOD_CPU_OPERATIONS is refused naming the variable and the choices", "[unit]") {
  auto env = environment({{"HOROVOD_CPU_OPERATIONS", "gloo"}});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE_FALSE(opened.isOk());
  CHECK(opened.status().code() == hvd::Errc::kInvalidArgument);
  CHECK(opened.status().message() == "HOROVOD_CPU_OPERATIONS='gloo' is not an operations backend here");
  CHECK(opened.status().hint().find("tcp") != std::string::npos);
}

TEST_CASE("HOROVOD_CPU_OPERATIONS wins over HVD_CPU_OPERATIONS, in any case", "[unit]") {
  auto env = environment({{"HOROVOD_CPU_OPERATIONS", "TCP"}, {"HVD_CPU_OPERATIONS", "mpi"}});
  auto cpu = cpuOperations(env);
  REQUIRE(cpu.isOk());
  CHECK(*cpu == "tcp");
}
