// runtime/backends/cuda/gpu_inventory.h: which NVIDIA driver, CUDA runtime and GPUs this
// process can see right now. Everything is loaded with dlopen, so a machine with the CUDA
// toolkit but no driver and no GPU (a login node, CI) gets an answer instead of a crash.
#pragma once

#include <string>

namespace hvd::backends::cuda {

struct GpuInventory {
  std::string driverVersion;   // e.g. "13.0"; empty when no driver could be loaded
  std::string runtimeVersion;  // the libcudart found now; empty when none
  int visibleGpus = 0;         // devices after CUDA_VISIBLE_DEVICES is applied
  std::string reason;          // why visibleGpus is 0 (or the runtime is missing)
};

// Blocks while the driver initialises (cuInit), typically milliseconds. Not thread-safe.
GpuInventory inspectGpus();

// "CUDA 13.0" from a CUDA version code such as 13000.
std::string cudaVersionText(int code);

}  // namespace hvd::backends::cuda
