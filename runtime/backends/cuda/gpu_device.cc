// runtime/backends/cuda/gpu_device.cc: context, stream and growing buffers of one GPU.
#include "runtime/backends/cuda/gpu_device.h"

#include <algorithm>
#include <thread>

// The batched-copy kernel's PTX (batched_copy.cu, embedded at build time; empty without nvcc).
extern const char kBatchedCopyPtx[];

namespace hvd::backends::cuda {

Result<int> deviceOf(const CudaDriver& driver, const void* pointer) {
  int ordinal = -1;
  CUresult rc = driver.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                             reinterpret_cast<CUdeviceptr>(pointer));
  if (rc != CUDA_SUCCESS || ordinal < 0) {
    return Status(Errc::kInvalidArgument, "a tensor marked as GPU memory is not memory the CUDA driver knows")
        .withHint("pass device=cpu for host memory, or a pointer from cudaMalloc / a CUDA tensor");
  }
  return ordinal;
}

Result<std::unique_ptr<GpuDevice>> GpuDevice::open(const CudaDriver& driver, int ordinal) {
  std::unique_ptr<GpuDevice> gpu(new GpuDevice(driver, ordinal));
  HVD_RETURN_IF_ERROR(driver.check(driver.cuDeviceGet(&gpu->device_, ordinal), "cuDeviceGet"));
  char name[128] = {};
  driver.cuDeviceGetName(name, sizeof name, gpu->device_);
  gpu->description_ = "GPU " + std::to_string(ordinal) + " (" + name + ")";
  HVD_RETURN_IF_ERROR(
      driver.check(driver.cuDevicePrimaryCtxRetain(&gpu->context_, gpu->device_), "retaining " + gpu->description_));
  HVD_RETURN_IF_ERROR(gpu->makeCurrent());
  HVD_RETURN_IF_ERROR(driver.check(driver.cuStreamCreate(&gpu->stream_, CU_STREAM_NON_BLOCKING),
                                   "creating a stream on " + gpu->description_));
  gpu->active_ = gpu->stream_;
  int pools = 0;
  driver.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, gpu->device_);
  if (pools != 0) {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = gpu->device_;
    // Without a pool of its own (a virtualised GPU may refuse one) allocate() takes cuMemAlloc.
    if (driver.cuMemPoolCreate(&gpu->pool_, &props) == CUDA_SUCCESS) {
      cuuint64_t keep = kPoolKeepBytes;
      driver.cuMemPoolSetAttribute(gpu->pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    } else {
      gpu->pool_ = nullptr;
    }
  }
  return gpu;
}

GpuDevice::~GpuDevice() {
  if (context_ == nullptr) return;
  if (!makeCurrent().isOk()) return;
  // Best effort: at process exit the driver may already be shutting down.
  if (stream_ != nullptr) {
    driver_.cuStreamSynchronize(stream_);
    driver_.cuStreamDestroy(stream_);
  }
  if (scratch_ != 0) driver_.cuMemFree(scratch_);
  if (listsDevice_ != 0) driver_.cuMemFree(listsDevice_);
  if (listsHost_ != nullptr) driver_.cuMemFreeHost(listsHost_);
  if (copyModule_ != nullptr) driver_.cuModuleUnload(copyModule_);
  // Buffers still out keep what they need: the driver frees the pool after the last.
  if (pool_ != nullptr) driver_.cuMemPoolDestroy(pool_);
  for (void* p : pinned_) {
    if (p != nullptr) driver_.cuMemFreeHost(p);
  }
  driver_.cuDevicePrimaryCtxRelease(device_);
}

Status GpuDevice::makeCurrent() {
  return driver_.check(driver_.cuCtxSetCurrent(context_), "making " + description_ + " current");
}

Result<std::byte*> GpuDevice::scratch(size_t bytes) {
  bytes = std::max<size_t>(bytes, 256);
  if (bytes > scratchBytes_) {
    HVD_RETURN_IF_ERROR(makeCurrent());
    if (scratch_ != 0) {
      // Work queued on the old buffer must finish before it is freed.
      HVD_RETURN_IF_ERROR(driver_.check(driver_.cuStreamSynchronize(active_), "waiting for " + description_));
      driver_.cuMemFree(scratch_);
      scratch_ = 0;
      scratchBytes_ = 0;
    }
    HVD_RETURN_IF_ERROR(driver_.check(driver_.cuMemAlloc(&scratch_, bytes),
                                      "allocating " + std::to_string(bytes) + " bytes on " + description_));
    scratchBytes_ = bytes;
  }
  return reinterpret_cast<std::byte*>(scratch_);
}

Result<DeviceBuffer> GpuDevice::allocate(size_t bytes) {
  if (bytes == 0) return DeviceBuffer{nullptr, 0, ordinal_};
  HVD_RETURN_IF_ERROR(makeCurrent());
  CUcontext held = nullptr;
  HVD_RETURN_IF_ERROR(
      driver_.check(driver_.cuDevicePrimaryCtxRetain(&held, device_), "retaining " + description_ + "'s context"));
  CUdeviceptr at = 0;
  const bool pooled = pool_ != nullptr;
  CUresult rc = pooled ? driver_.cuMemAllocFromPoolAsync(&at, bytes, pool_, active_) : driver_.cuMemAlloc(&at, bytes);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && pooled) {
    // What the pool keeps cached may be what is missing: give it back once and try again.
    driver_.cuStreamSynchronize(active_);
    driver_.cuMemPoolTrimTo(pool_, 0);
    rc = driver_.cuMemAllocFromPoolAsync(&at, bytes, pool_, active_);
  }
  if (Status s = driver_.check(rc, "allocating " + std::to_string(bytes) + " bytes on " + description_ +
                                       " for a collective's result");
      !s.isOk()) {
    driver_.cuDevicePrimaryCtxRelease(device_);
    if (rc != CUDA_ERROR_OUT_OF_MEMORY) return s;
    return s.withHint("the framework's allocator may be keeping the GPU's memory: torch.cuda.empty_cache() gives "
                      "back what PyTorch holds unused");
  }
  const CudaDriver* driver = &driver_;
  const CUdevice device = device_;
  // Best effort, as in the destructor: at process exit the driver may be shutting down.
  auto release = [driver, held, device, pooled](std::byte* memory) {
    CUcontext previous = nullptr;
    driver->cuCtxGetCurrent(&previous);
    driver->cuCtxSetCurrent(held);
    if (pooled) {
      driver->cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(memory), CU_STREAM_LEGACY);
    } else {
      driver->cuMemFree(reinterpret_cast<CUdeviceptr>(memory));
    }
    driver->cuCtxSetCurrent(previous);
    driver->cuDevicePrimaryCtxRelease(device);
  };
  return DeviceBuffer{std::shared_ptr<std::byte>(reinterpret_cast<std::byte*>(at), release), bytes, ordinal_};
}

Result<std::byte*> GpuDevice::pinned(size_t bytes, int slot) {
  bytes = std::max<size_t>(bytes, 256);
  if (bytes > pinnedBytes_[slot]) {
    HVD_RETURN_IF_ERROR(makeCurrent());
    if (pinned_[slot] != nullptr) {
      HVD_RETURN_IF_ERROR(driver_.check(driver_.cuStreamSynchronize(active_), "waiting for " + description_));
      driver_.cuMemFreeHost(pinned_[slot]);
      pinned_[slot] = nullptr;
      pinnedBytes_[slot] = 0;
    }
    HVD_RETURN_IF_ERROR(driver_.check(driver_.cuMemAllocHost(&pinned_[slot], bytes),
                                      "allocating " + std::to_string(bytes) + " bytes of pinned host memory"));
    pinnedBytes_[slot] = bytes;
  }
  return static_cast<std::byte*>(pinned_[slot]);
}

Status GpuDevice::copyAsync(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Status::ok();
  return driver_.check(driver_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                                             bytes, active_),
                       "copying " + std::to_string(bytes) + " bytes on " + description_);
}

// One entry of the batched-copy kernel's list: HvdCopy in batched_copy.cu.
struct KernelCopy {
  const void* src;
  void* dst;
  unsigned long long bytes;
};
static_assert(sizeof(KernelCopy) == 24);

Status GpuDevice::loadCopyKernel() {
  kernelTried_ = true;
  if (kBatchedCopyPtx[0] == '\0') return Status::ok();  // built without nvcc
  HVD_RETURN_IF_ERROR(makeCurrent());
  // A driver older than the PTX refuses it: copies then go one call each, as before.
  if (driver_.cuModuleLoadData(&copyModule_, kBatchedCopyPtx) != CUDA_SUCCESS) {
    copyModule_ = nullptr;
    return Status::ok();
  }
  if (driver_.cuModuleGetFunction(&copyKernel_, copyModule_, "hvd_batched_copy") != CUDA_SUCCESS) {
    copyKernel_ = nullptr;
  }
  return Status::ok();
}

Status GpuDevice::copyMany(std::span<const DeviceCopy> copies) {
  // Copies with something to move and small enough for the kernel's one block each.
  auto forKernel = [](const DeviceCopy& c) { return c.bytes > 0 && c.dst != c.src && c.bytes <= kKernelCopyMax; };
  const auto small = static_cast<size_t>(std::count_if(copies.begin(), copies.end(), forKernel));
  if (small > 1 && !kernelTried_) HVD_RETURN_IF_ERROR(loadCopyKernel());
  const bool launch = small > 1 && copyKernel_ != nullptr;
  for (const DeviceCopy& c : copies) {
    if (!launch || !forKernel(c)) HVD_RETURN_IF_ERROR(copyAsync(c.dst, c.src, c.bytes));
  }
  if (!launch) return Status::ok();
  HVD_RETURN_IF_ERROR(makeCurrent());
  const size_t need = small * sizeof(KernelCopy);
  if (listsUsed_ + need > listsBytes_) {
    // Lists already queued are read in stream order: the stream finishes before they move.
    HVD_RETURN_IF_ERROR(driver_.check(driver_.cuStreamSynchronize(active_), "waiting for " + description_));
    listsUsed_ = 0;
    if (need > listsBytes_) {
      if (listsHost_ != nullptr) driver_.cuMemFreeHost(listsHost_), listsHost_ = nullptr;
      if (listsDevice_ != 0) driver_.cuMemFree(listsDevice_), listsDevice_ = 0;
      listsBytes_ = 0;
      const size_t bytes = std::max<size_t>(need, 64 << 10);
      HVD_RETURN_IF_ERROR(driver_.check(driver_.cuMemAllocHost(&listsHost_, bytes), "allocating pinned memory"));
      HVD_RETURN_IF_ERROR(driver_.check(driver_.cuMemAlloc(&listsDevice_, bytes),
                                        "allocating " + std::to_string(bytes) + " bytes on " + description_));
      listsBytes_ = bytes;
    }
  }
  auto* list = reinterpret_cast<KernelCopy*>(static_cast<std::byte*>(listsHost_) + listsUsed_);
  int count = 0;
  for (const DeviceCopy& c : copies) {
    if (forKernel(c)) list[count++] = KernelCopy{c.src, c.dst, c.bytes};
  }
  CUdeviceptr onDevice = listsDevice_ + listsUsed_;
  HVD_RETURN_IF_ERROR(driver_.check(driver_.cuMemcpyHtoDAsync(onDevice, list, need, active_),
                                    "copying a copy list to " + description_));
  listsUsed_ += (need + 255) / 256 * 256;
  void* params[] = {&onDevice, &count};
  const unsigned blocks = static_cast<unsigned>(std::min(count, 4096));
  return driver_.check(driver_.cuLaunchKernel(copyKernel_, blocks, 1, 1, 256, 1, 1, 0, active_, params, nullptr),
                       "launching the batched copy on " + description_);
}

Status GpuDevice::waitFor(CUstream other) {
  HVD_RETURN_IF_ERROR(makeCurrent());
  CUevent ready = nullptr;
  HVD_RETURN_IF_ERROR(driver_.check(driver_.cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING), "creating an event"));
  CUresult rc = driver_.cuEventRecord(ready, other);
  if (rc == CUDA_SUCCESS) rc = driver_.cuStreamWaitEvent(active_, ready, 0);
  driver_.cuEventDestroy(ready);  // released once the wait has passed it
  return driver_.check(rc, "ordering " + description_ + "'s stream after the caller's");
}

Result<bool> waitForStream(const std::atomic<GpuDevice*>& device, CUstream other) {
  GpuDevice* gpu = device.load(std::memory_order_acquire);
  // A stream the device cannot wait for (another GPU's: the collective then names the
  // mismatch) is the caller's to synchronize, as before there was a device.
  return gpu != nullptr && gpu->waitFor(other).isOk();
}

Status GpuDevice::synchronize(std::chrono::milliseconds timeout, const std::function<Status()>& poll) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Spin briefly (most work ends within microseconds), then back off: a blocked NCCL
  // call would otherwise burn a core for the whole timeout.
  for (int spins = 0;; ++spins) {
    CUresult rc = driver_.cuStreamQuery(active_);
    if (rc == CUDA_SUCCESS) {
      listsUsed_ = 0;  // every copy list queued is read
      return Status::ok();
    }
    if (rc != CUDA_ERROR_NOT_READY) return driver_.check(rc, "work on " + description_);
    if (poll) HVD_RETURN_IF_ERROR(poll());
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(Errc::kTimeout, "work on " + description_ + " did not finish within " +
                                        std::to_string(timeout.count() / 1000) + " s (HVD_TIMEOUT)");
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(spins > 20000 ? 1000 : 50));
  }
}

}  // namespace hvd::backends::cuda
