// runtime/backends/cuda/cuda_driver.cc: the driver table, filled once.
#include "runtime/backends/cuda/cuda_driver.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <mutex>

#include "runtime/common/dynamic_library.h"

namespace hvd::backends::cuda {

std::string cudaVersionText(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

std::string uuidText(const CUuuid& uuid) {
  // nvidia-smi's grouping: 8-4-4-4-12 hex digits.
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

Result<CudaDriver> CudaDriver::loadFrom(const std::vector<std::string>& candidates) {
  auto library = DynamicLibrary::open(candidates);
  if (!library) {
    return Status(Errc::kUnavailable, "no GPU visible: the NVIDIA driver (" + candidates.front() + ") is not installed");
  }
  // The library stays loaded for the life of the process (deliberately never freed):
  // device memory, contexts and NCCL's threads outlive any one caller, and unloading a
  // driver is never safe.
  const DynamicLibrary& kept = *new DynamicLibrary(std::move(*library));
  CudaDriver d;
  d.path = kept.path();
  bool complete = true;
#define HVD_CUDA_LOAD(name)                                                        \
  d.name = reinterpret_cast<decltype(d.name)>(kept.symbol(HVD_CUDA_NAME(name))); \
  complete = complete && d.name != nullptr
  HVD_CUDA_LOAD(cuInit);
  HVD_CUDA_LOAD(cuDriverGetVersion);
  HVD_CUDA_LOAD(cuDeviceGetCount);
  HVD_CUDA_LOAD(cuDeviceGet);
  HVD_CUDA_LOAD(cuDeviceGetUuid);
  HVD_CUDA_LOAD(cuDeviceGetPCIBusId);
  HVD_CUDA_LOAD(cuDeviceGetName);
  HVD_CUDA_LOAD(cuDeviceGetAttribute);
  HVD_CUDA_LOAD(cuDevicePrimaryCtxRetain);
  HVD_CUDA_LOAD(cuDevicePrimaryCtxRelease);
  HVD_CUDA_LOAD(cuCtxSetCurrent);
  HVD_CUDA_LOAD(cuCtxGetCurrent);
  HVD_CUDA_LOAD(cuCtxGetDevice);
  HVD_CUDA_LOAD(cuPointerGetAttribute);
  HVD_CUDA_LOAD(cuMemAlloc);
  HVD_CUDA_LOAD(cuMemFree);
  HVD_CUDA_LOAD(cuMemAllocHost);
  HVD_CUDA_LOAD(cuMemFreeHost);
  HVD_CUDA_LOAD(cuMemcpy);
  HVD_CUDA_LOAD(cuMemcpyAsync);
  HVD_CUDA_LOAD(cuMemcpyHtoDAsync);
  HVD_CUDA_LOAD(cuMemcpyDtoHAsync);
  HVD_CUDA_LOAD(cuMemcpyDtoDAsync);
  HVD_CUDA_LOAD(cuMemsetD8Async);
  HVD_CUDA_LOAD(cuMemPoolCreate);  // the stream-ordered allocator: CUDA 11.2 on
  HVD_CUDA_LOAD(cuMemPoolDestroy);
  HVD_CUDA_LOAD(cuMemPoolSetAttribute);
  HVD_CUDA_LOAD(cuMemPoolTrimTo);
  HVD_CUDA_LOAD(cuMemAllocFromPoolAsync);
  HVD_CUDA_LOAD(cuMemFreeAsync);
  HVD_CUDA_LOAD(cuEventCreate);
  HVD_CUDA_LOAD(cuEventRecord);
  HVD_CUDA_LOAD(cuEventDestroy);
  HVD_CUDA_LOAD(cuStreamWaitEvent);
  HVD_CUDA_LOAD(cuModuleLoadData);
  HVD_CUDA_LOAD(cuModuleUnload);
  HVD_CUDA_LOAD(cuModuleGetFunction);
  HVD_CUDA_LOAD(cuLaunchKernel);
  HVD_CUDA_LOAD(cuStreamCreate);
  HVD_CUDA_LOAD(cuStreamDestroy);
  HVD_CUDA_LOAD(cuStreamSynchronize);
  HVD_CUDA_LOAD(cuStreamQuery);
  HVD_CUDA_LOAD(cuGetErrorName);
  HVD_CUDA_LOAD(cuGetErrorString);
#undef HVD_CUDA_LOAD
  if (!complete) {
    return Status(Errc::kUnavailable, "no GPU visible: " + d.path + " lacks parts of the CUDA driver API")
        .withHint("the driver is older than CUDA 12; update it");
  }
  int code = 0;
  if (d.cuDriverGetVersion(&code) == CUDA_SUCCESS) d.version = cudaVersionText(code);
  if (CUresult rc = d.cuInit(0); rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(rc, &name);
    return Status(Errc::kUnavailable, std::string("no GPU visible: cuInit failed with ") +
                                          (name != nullptr ? name : "error " + std::to_string(static_cast<int>(rc))));
  }
  if (d.cuDeviceGetCount(&d.deviceCount) != CUDA_SUCCESS || d.deviceCount <= 0) {
    return Status(Errc::kUnavailable, "no GPU visible: the driver reports 0 devices (check CUDA_VISIBLE_DEVICES)");
  }
  return d;
}

Result<const CudaDriver*> CudaDriver::load() {
  static std::once_flag once;
  static Result<CudaDriver> loaded = Status(Errc::kInternal, "not loaded");
  // Only the real driver's soname: the toolkit's stubs/libcuda.so would load and then fail.
  // The driver starts a thread of its own (cuInit), which inherits the signal mask of the
  // thread that loads it: born with every signal blocked, it never takes one meant for the
  // process. hvdrun waits for SIGCHLD on a signalfd with the signal blocked everywhere else;
  // a driver thread that accepted it swallowed every rank's exit, and hvdrun waited for ever
  // (seen on an H200 whenever hvdrun itself counted the GPUs).
  std::call_once(once, [] {
    sigset_t all, previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &previous);
    loaded = loadFrom({"libcuda.so.1"});
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  });
  if (!loaded) return loaded.status();
  return &*loaded;
}

Status CudaDriver::usePrimaryContext(int ordinal) const {
  CUdevice device = 0;
  CUcontext context = nullptr;
  HVD_RETURN_IF_ERROR(check(cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  HVD_RETURN_IF_ERROR(check(cuDevicePrimaryCtxRetain(&context, device), "retaining GPU " + std::to_string(ordinal)));
  return check(cuCtxSetCurrent(context), "making GPU " + std::to_string(ordinal) + " current");
}

Status CudaDriver::check(CUresult rc, std::string_view what) const {
  if (rc == CUDA_SUCCESS) return Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(rc, &name);
  cuGetErrorString(rc, &text);
  std::string message = std::string(what) + " failed: " + (name != nullptr ? name : "CUDA error " + std::to_string(rc)) +
                        (text != nullptr ? std::string(" (") + text + ")" : "");
  return Status(Errc::kSystem, message);
}

}  // namespace hvd::backends::cuda
