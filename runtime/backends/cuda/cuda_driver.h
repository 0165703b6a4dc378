// runtime/backends/cuda/cuda_driver.h: the CUDA driver API, loaded with dlopen. Only the
// driver (libcuda.so.1, installed with the GPU driver) is needed: no libcudart, so a rank
// on a GPU node needs nothing from the toolkit, and hvdrun and CPU-only ranks start on
// machines with no driver at all. The primary context is shared with the frameworks
// (PyTorch and TensorFlow use it too), so device pointers from them are valid here.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

// The exported name behind cuda.h's versioned macros (cuMemAlloc -> "cuMemAlloc_v2").
#define HVD_CUDA_NAME2(name) #name
#define HVD_CUDA_NAME(name) HVD_CUDA_NAME2(name)

namespace hvd::backends::cuda {

struct CudaDriver {
#define HVD_CUDA_FN(name) decltype(&::name) name = nullptr
  HVD_CUDA_FN(cuInit);
  HVD_CUDA_FN(cuDriverGetVersion);
  HVD_CUDA_FN(cuDeviceGetCount);
  HVD_CUDA_FN(cuDeviceGet);
  HVD_CUDA_FN(cuDeviceGetUuid);
  HVD_CUDA_FN(cuDeviceGetPCIBusId);
  HVD_CUDA_FN(cuDeviceGetName);
  HVD_CUDA_FN(cuDeviceGetAttribute);
  HVD_CUDA_FN(cuDevicePrimaryCtxRetain);
  HVD_CUDA_FN(cuDevicePrimaryCtxRelease);
  HVD_CUDA_FN(cuCtxSetCurrent);
  HVD_CUDA_FN(cuCtxGetCurrent);
  HVD_CUDA_FN(cuCtxGetDevice);
  HVD_CUDA_FN(cuPointerGetAttribute);
  HVD_CUDA_FN(cuMemAlloc);
  HVD_CUDA_FN(cuMemFree);
  HVD_CUDA_FN(cuMemAllocHost);
  HVD_CUDA_FN(cuMemFreeHost);
  HVD_CUDA_FN(cuMemcpy);
  HVD_CUDA_FN(cuMemcpyAsync);
  HVD_CUDA_FN(cuMemcpyHtoDAsync);
  HVD_CUDA_FN(cuMemcpyDtoHAsync);
  HVD_CUDA_FN(cuMemcpyDtoDAsync);
  HVD_CUDA_FN(cuMemsetD8Async);
  HVD_CUDA_FN(cuMemPoolCreate);
  HVD_CUDA_FN(cuMemPoolDestroy);
  HVD_CUDA_FN(cuMemPoolSetAttribute);
  HVD_CUDA_FN(cuMemPoolTrimTo);
  HVD_CUDA_FN(cuMemAllocFromPoolAsync);
  HVD_CUDA_FN(cuMemFreeAsync);
  HVD_CUDA_FN(cuEventCreate);
  HVD_CUDA_FN(cuEventRecord);
  HVD_CUDA_FN(cuEventDestroy);
  HVD_CUDA_FN(cuStreamWaitEvent);
  HVD_CUDA_FN(cuModuleLoadData);
  HVD_CUDA_FN(cuModuleUnload);
  HVD_CUDA_FN(cuModuleGetFunction);
  HVD_CUDA_FN(cuLaunchKernel);
  HVD_CUDA_FN(cuStreamCreate);
  HVD_CUDA_FN(cuStreamDestroy);
  HVD_CUDA_FN(cuStreamSynchronize);
  HVD_CUDA_FN(cuStreamQuery);
  HVD_CUDA_FN(cuGetErrorName);
  HVD_CUDA_FN(cuGetErrorString);
#undef HVD_CUDA_FN

  std::string path;           // the library the loader resolved
  std::string version;        // "13.0"
  int deviceCount = 0;        // after CUDA_VISIBLE_DEVICES

  // Loads and initialises the driver once per process (cuInit; milliseconds, longer on
  // the first call after boot) and keeps it. kUnavailable naming what is missing: no
  // libcuda.so.1 (no driver installed), a library without the API, cuInit's error, or no
  // visible device. Thread-safe.
  static Result<const CudaDriver*> load();
  // The same from other library names, uncached (load() uses {"libcuda.so.1"}); for tests
  // of the failure paths.
  static Result<CudaDriver> loadFrom(const std::vector<std::string>& candidates);

  // Makes device `ordinal`'s primary context current on the calling thread and keeps it
  // retained for the life of the process, as a framework does (programs and tests that
  // allocate device memory themselves).
  Status usePrimaryContext(int ordinal) const;

  // kSystem naming `what` and the driver's error (name and text); ok for CUDA_SUCCESS.
  Status check(CUresult rc, std::string_view what) const;
};

// "13.0" from a CUDA version code such as 13000.
std::string cudaVersionText(int code);

// "GPU-1a2b3c4d-..." as nvidia-smi -L prints it, from the driver's 16-byte UUID.
std::string uuidText(const CUuuid& uuid);

}  // namespace hvd::backends::cuda
