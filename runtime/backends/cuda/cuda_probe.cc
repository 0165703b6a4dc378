// runtime/backends/cuda/cuda_probe.cc: CUDA tensor operations need the runtime library,
// a driver and at least one visible GPU.
#include <cuda.h>

#include "runtime/backends/backend_probe.h"
#include "runtime/backends/cuda/gpu_inventory.h"

namespace hvd::backends::cuda {

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = "CUDA " + cudaVersionText(CUDA_VERSION);
  GpuInventory gpus = inspectGpus();
  result.runVersion = "runtime " + (gpus.runtimeVersion.empty() ? "not found" : gpus.runtimeVersion) +
                      ", driver " + (gpus.driverVersion.empty() ? "not found" : gpus.driverVersion) + ", " +
                      std::to_string(gpus.visibleGpus) + " GPU(s) visible";
  if (gpus.runtimeVersion.empty()) {
    result.reason = "the CUDA runtime library (libcudart) cannot be loaded";
  } else if (gpus.visibleGpus == 0) {
    result.reason = gpus.reason;
  } else {
    result.usable = true;
  }
  return result;
}

int countGpus() { return inspectGpus().visibleGpus; }

}  // namespace hvd::backends::cuda
