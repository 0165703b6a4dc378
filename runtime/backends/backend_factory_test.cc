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

TEST_CASE("a world of one opens the TCP backend first, and it moves CPU tensors only", "[unit]") {
  auto env = environment({});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE(opened.isOk());
  REQUIRE(opened->size() >= 1);
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
  REQUIRE((*opened)[0]->agree(bytes, CollectiveBackend::ControlWait::kBrief).isOk());
  CHECK(bytes == std::vector<std::uint8_t>{0, 1, 255, 7});
}

TEST_CASE("an unknown HOROVOD_CPU_OPERATIONS is refused naming the variable and the choices", "[unit]") {
  auto env = environment({{"HOROVOD_CPU_OPERATIONS", "nccl"}});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE_FALSE(opened.isOk());
  CHECK(opened.status().code() == hvd::Errc::kInvalidArgument);
  CHECK(opened.status().message() == "HOROVOD_CPU_OPERATIONS='nccl' is not an operations backend here");
  CHECK(opened.status().hint().find("tcp") != std::string::npos);
}

TEST_CASE("Horovod's gloo and ccl CPU operations run on hvd's ring", "[unit]") {
  for (const char* value : {"gloo", "CCL"}) {
    auto env = environment({{"HOROVOD_CPU_OPERATIONS", value}});
    auto cpu = cpuOperations(env);
    REQUIRE(cpu.isOk());
    CHECK(*cpu == "tcp");
  }
}

TEST_CASE("HOROVOD_CPU_OPERATIONS wins over HVD_CPU_OPERATIONS, in any case", "[unit]") {
  auto env = environment({{"HOROVOD_CPU_OPERATIONS", "TCP"}, {"HVD_CPU_OPERATIONS", "mpi"}});
  auto cpu = cpuOperations(env);
  REQUIRE(cpu.isOk());
  CHECK(*cpu == "tcp");
}

namespace {
// The GPU backend a world of one ends up with: the last one opened (GPU backends come after
// the host backends).
CollectiveBackend& gpuBackendOf(std::vector<std::unique_ptr<CollectiveBackend>>& opened) { return *opened.back(); }
}  // namespace

TEST_CASE("GPU tensors always have a backend: NCCL, the staged path, or one that fails saying why", "[unit]") {
  auto env = environment({});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE(opened.isOk());
  REQUIRE(opened->size() == 2);
  CollectiveBackend& gpu = gpuBackendOf(*opened);
  CHECK(gpu.supports(hvd::Device::kCuda));
  CHECK_FALSE(gpu.supports(hvd::Device::kCpu));
  std::string name(gpu.name());
  CHECK((name == "nccl" || name == "cuda-staged" || name == "none"));
  if (name == "none") {  // no driver or no GPU here: every call explains it
    float x[1] = {1};
    hvd::Status s = gpu.allreduce(TensorRef{x, 1, hvd::DataType::kFloat32, hvd::Device::kCuda}, hvd::ReduceOp::kSum);
    CHECK(s.code() == hvd::Errc::kUnavailable);
    CHECK(s.message().rfind("GPU tensors cannot be moved here: ", 0) == 0);
    CHECK(s.message().find("no GPU visible") != std::string::npos);
    CHECK(gpu.useStream(nullptr).message() == s.message());
  }
}

TEST_CASE("HOROVOD_GPU_OPERATIONS=cpu picks the staged path and never NCCL", "[unit]") {
  auto env = environment({{"HOROVOD_GPU_OPERATIONS", "cpu"}});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  REQUIRE(opened.isOk());
  std::string name(gpuBackendOf(*opened).name());
  CHECK((name == "cuda-staged" || name == "none"));
}

TEST_CASE("ranks that share a GPU never get NCCL: left to choose the staged path runs, and asked for NCCL init fails",
          "[unit]") {
  auto shareGpus = [](CollectiveBackend&, BackendSetup& gpu) {
    gpu.gpusShared = true;
    return hvd::Status::ok();
  };
  auto env = environment({});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup, shareGpus);
  REQUIRE(opened.isOk());
  std::string name(gpuBackendOf(*opened).name());
  CHECK((name == "cuda-staged" || name == "none"));
  auto nccl = environment({{"HOROVOD_GPU_OPERATIONS", "nccl"}});
  setup.env = &nccl;
  auto refused = openBackends(setup, shareGpus);
  REQUIRE_FALSE(refused.isOk());
  // Where this hvd was built without NCCL, that is the reason given instead.
  if (refused.status().code() == hvd::Errc::kInvalidUsage) {
    CHECK(refused.status().message() ==
          "HOROVOD_GPU_OPERATIONS=nccl, but ranks share a GPU (hvdrun --oversubscribe-gpus), and NCCL takes one GPU "
          "per rank");
  }
  // The check's own failure ends the opening.
  auto failing = openBackends(setup, [](CollectiveBackend&, BackendSetup&) {
    return hvd::Status(hvd::Errc::kInvalidUsage, "GPUs not one per rank");
  });
  REQUIRE_FALSE(failing.isOk());
  CHECK(failing.status().message() == "GPUs not one per rank");
}

TEST_CASE("HOROVOD_GPU_OPERATIONS=nccl where NCCL cannot run fails init with the reason", "[unit]") {
  auto env = environment({{"HOROVOD_GPU_OPERATIONS", "nccl"}});
  BackendSetup setup;
  setup.env = &env;
  auto opened = openBackends(setup);
  if (opened.isOk()) {
    CHECK(gpuBackendOf(*opened).name() == "nccl");  // a GPU machine: asked for, and there
    return;
  }
  CHECK(opened.status().code() == hvd::Errc::kUnavailable);
  CHECK(opened.status().message().rfind("HOROVOD_GPU_OPERATIONS=nccl: ", 0) == 0);
}

TEST_CASE("HOROVOD_GPU_OPERATIONS takes nccl, cpu, staged and auto in any case, and refuses the rest naming it",
          "[unit]") {
  CHECK(*gpuOperations(environment({})) == GpuOperations::kAuto);
  CHECK(*gpuOperations(environment({{"HOROVOD_GPU_OPERATIONS", "NCCL"}})) == GpuOperations::kNccl);
  CHECK(*gpuOperations(environment({{"HOROVOD_GPU_OPERATIONS", "cpu"}})) == GpuOperations::kCpu);
  CHECK(*gpuOperations(environment({{"HVD_GPU_OPERATIONS", "staged"}})) == GpuOperations::kCpu);
  CHECK(*gpuOperations(environment({{"HVD_GPU_OPERATIONS", "auto"}})) == GpuOperations::kAuto);
  CHECK(*gpuOperations(environment({{"HOROVOD_GPU_OPERATIONS", "cpu"}, {"HVD_GPU_OPERATIONS", "nccl"}})) ==
        GpuOperations::kCpu);
  auto bad = gpuOperations(environment({{"HVD_GPU_OPERATIONS", "rccl"}}));
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == hvd::Errc::kInvalidArgument);
  CHECK(bad.status().message() == "HVD_GPU_OPERATIONS='rccl' is not a GPU operations backend");
  CHECK(bad.status().hint().find("nccl") != std::string::npos);
  // Refused before anything connects.
  auto env = environment({{"HOROVOD_GPU_OPERATIONS", "gloo"}});
  BackendSetup setup;
  setup.env = &env;
  CHECK(openBackends(setup).status().code() == hvd::Errc::kInvalidArgument);
}
