// runtime/backends/cuda/cuda_driver_test.cc: the driver's failure paths, which every
// machine without a GPU takes, and the text of GPU identities.
#include <catch2/catch.hpp>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_inventory.h"

using namespace hvd::backends::cuda;

TEST_CASE("a missing driver library is reported as no GPU visible, naming the library", "[unit]") {
  auto driver = CudaDriver::loadFrom({"libcuda-not-here.so.1"});
  REQUIRE_FALSE(driver.isOk());
  CHECK(driver.status().code() == hvd::Errc::kUnavailable);
  CHECK(driver.status().message() == "no GPU visible: the NVIDIA driver (libcuda-not-here.so.1) is not installed");
}

TEST_CASE("a library without the driver API is refused naming it", "[unit]") {
  auto driver = CudaDriver::loadFrom({"libm.so.6"});
  REQUIRE_FALSE(driver.isOk());
  CHECK(driver.status().code() == hvd::Errc::kUnavailable);
  CHECK(driver.status().message().find("lacks parts of the CUDA driver API") != std::string::npos);
}

TEST_CASE("the inventory agrees with the driver: a reason exactly when no GPU is visible", "[unit]") {
  GpuInventory gpus = inspectGpus();
  auto driver = CudaDriver::load();
  CHECK(driver.isOk() == (gpus.visibleGpus > 0));
  CHECK(gpus.reason.empty() == (gpus.visibleGpus > 0));
  if (!driver.isOk()) CHECK(gpus.reason == driver.status().message());
}

TEST_CASE("GPU UUIDs print as nvidia-smi prints them", "[unit]") {
  CUuuid uuid{};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(0xa0 + i);
  CHECK(uuidText(uuid) == "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

TEST_CASE("CUDA version codes print as major.minor", "[unit]") {
  CHECK(cudaVersionText(13000) == "13.0");
  CHECK(cudaVersionText(12040) == "12.4");
}
