// runtime/backends/cuda/cuda_probe.cc: CUDA tensor operations need a driver, a visible GPU
// and that GPU answering a tiny copy; --check-build says [X] only then.
#include <cuda.h>

#include "runtime/backends/backend_probe.h"
#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_inventory.h"

namespace hvd::backends::cuda {

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = "CUDA " + cudaVersionText(CUDA_VERSION);
  GpuInventory gpus = inspectGpus();
  result.runVersion = "driver " + (gpus.driverVersion.empty() ? "not found" : gpus.driverVersion) + ", " +
                      std::to_string(gpus.visibleGpus) + " GPU(s) visible";
  if (gpus.visibleGpus == 0) {
    result.reason = gpus.reason;
  } else if (Status s = smokeTestGpu(); !s.isOk()) {
    result.reason = "a 4-byte copy to GPU 0 and back failed: " + s.message();
  } else {
    result.usable = true;
  }
  return result;
}

int countGpus() { return inspectGpus().visibleGpus; }

}  // namespace hvd::backends::cuda
