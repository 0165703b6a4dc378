// runtime/backends/cuda/gpu_inventory.h: which NVIDIA driver and GPUs this process can see
// right now, and whether the GPU it would use answers. Everything is loaded with dlopen,
// so a machine with the CUDA toolkit but no driver and no GPU (a login node, CI) gets an
// answer instead of a crash.
#pragma once

#include <string>

#include "runtime/common/status.h"

namespace hvd::backends::cuda {

struct GpuInventory {
  std::string driverVersion;  // e.g. "13.0"; empty when no driver could be loaded
  int visibleGpus = 0;        // devices after CUDA_VISIBLE_DEVICES is applied
  std::string reason;         // why visibleGpus is 0
};

// Blocks while the driver initialises (cuInit), typically milliseconds. Thread-safe.
GpuInventory inspectGpus();

// A tiny operation on device 0 (allocate, copy 4 bytes there and back, compare): ok when
// the GPU really works, not only when it is listed. Blocks for milliseconds.
Status smokeTestGpu();

// The identity of one of this process's visible GPUs, for the start-up check that no two
// ranks share one: nvidia-smi's "GPU-<uuid>" and its PCI bus id. kUnavailable without a
// driver or a device.
struct GpuIdentity {
  std::string uuid;
  std::string pciBusId;
};
Result<GpuIdentity> gpuIdentity(int ordinal);  // of the devices this process sees

}  // namespace hvd::backends::cuda
