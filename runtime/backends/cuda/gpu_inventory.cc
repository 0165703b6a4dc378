// runtime/backends/cuda/gpu_inventory.cc: driver API first (it alone can tell "no driver"
// from "no device"), then the runtime library for its version.
#include "runtime/backends/cuda/gpu_inventory.h"

#include <cuda.h>

#include "runtime/common/dynamic_library.h"

namespace hvd::backends::cuda {

std::string cudaVersionText(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

GpuInventory inspectGpus() {
  GpuInventory inventory;
  auto runtime = DynamicLibrary::open({"libcudart.so." + std::to_string(CUDA_VERSION / 1000), "libcudart.so",
                                       HVD_CUDART_LIBRARY});
  if (runtime) {
    using RuntimeVersionFn = int (*)(int*);
    if (auto fn = runtime->function<RuntimeVersionFn>("cudaRuntimeGetVersion")) {
      int code = 0;
      if (fn(&code) == 0) inventory.runtimeVersion = cudaVersionText(code);
    }
  }

  // Only the real driver's soname: the toolkit's stubs/libcuda.so would load and then fail.
  auto driver = DynamicLibrary::open({"libcuda.so.1"});
  if (!driver) {
    inventory.reason = "no GPU visible: the NVIDIA driver (libcuda.so.1) is not installed";
    return inventory;
  }
  using InitFn = CUresult (*)(unsigned int);
  using VersionFn = CUresult (*)(int*);
  using CountFn = CUresult (*)(int*);
  using ErrorNameFn = CUresult (*)(CUresult, const char**);
  auto init = driver->function<InitFn>("cuInit");
  auto driverVersion = driver->function<VersionFn>("cuDriverGetVersion");
  auto deviceCount = driver->function<CountFn>("cuDeviceGetCount");
  auto errorName = driver->function<ErrorNameFn>("cuGetErrorName");
  if (init == nullptr || driverVersion == nullptr || deviceCount == nullptr) {
    inventory.reason = "no GPU visible: " + driver->path() + " lacks the CUDA driver API";
    return inventory;
  }
  int code = 0;
  if (driverVersion(&code) == CUDA_SUCCESS) inventory.driverVersion = cudaVersionText(code);
  if (CUresult rc = init(0); rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    if (errorName != nullptr) errorName(rc, &name);
    inventory.reason = std::string("no GPU visible: cuInit failed with ") +
                       (name != nullptr ? name : "error " + std::to_string(static_cast<int>(rc)));
    return inventory;
  }
  int count = 0;
  if (deviceCount(&count) != CUDA_SUCCESS || count <= 0) {
    inventory.reason = "no GPU visible: the driver reports 0 devices (check CUDA_VISIBLE_DEVICES)";
    return inventory;
  }
  inventory.visibleGpus = count;
  return inventory;
}

}  // namespace hvd::backends::cuda
