// runtime/backends/cuda/local_gpu.cc: this rank's GPU for the start-up check.
#include "runtime/backends/backend_factory.h"
#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_inventory.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::cuda {

LocalGpu inspectLocalGpu(int ordinal) {
  LocalGpu gpu;
  auto driver = CudaDriver::load();
  if (!driver) {
    // A driver that is installed but shows no device is an answer (0 GPUs: cuInit's
    // CUDA_ERROR_NO_DEVICE for a bad CUDA_VISIBLE_DEVICES); no driver at all is not.
    if (DynamicLibrary::open({"libcuda.so.1"})) gpu.driverGpus = 0;
    return gpu;
  }
  gpu.driverGpus = (*driver)->deviceCount;
  if (ordinal < 0 && gpu.driverGpus == 1) ordinal = 0;
  if (ordinal >= 0 && ordinal < gpu.driverGpus) {
    if (auto identity = gpuIdentity(ordinal)) gpu.uuid = identity->uuid;
    // An attribute of newer drivers: an older one answers an error, and MPS stays unknown.
    CUdevice device = 0;
    int mps = 0;
    if ((*driver)->cuDeviceGet(&device, ordinal) == CUDA_SUCCESS &&
        (*driver)->cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, device) == CUDA_SUCCESS) {
      gpu.mps = mps != 0 ? 1 : 0;
    }
  }
  return gpu;
}

}  // namespace hvd::backends::cuda
