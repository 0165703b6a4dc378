// runtime/backends/cuda/gpu_device.h: one GPU as a backend uses it: the device's primary
// context (the one PyTorch and TensorFlow use, so their pointers are valid here), a stream
// the runtime owns, and buffers that grow to the largest request seen: device scratch for
// the engine's fusion buffer and pinned host memory for staging.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "runtime/backends/collective_backend.h"
#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/common/status.h"

namespace hvd::backends::cuda {

// The device ordinal `pointer` lives on. kInvalidArgument when it is not device memory
// the driver knows (a host pointer passed as a GPU tensor).
Result<int> deviceOf(const CudaDriver& driver, const void* pointer);

class GpuDevice {
 public:
  // Retains the device's primary context and creates a non-blocking stream. Thread-
  // compatible: the engine serialises its calls, but they may come from several threads,
  // so every method first makes the context current on the calling thread.
  static Result<std::unique_ptr<GpuDevice>> open(const CudaDriver& driver, int ordinal);
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  int ordinal() const { return ordinal_; }
  // The stream work goes to: the caller's (useStream) or the device's own.
  CUstream stream() const { return active_; }
  // From the next call on, work goes to `stream` (nullptr: the device's own stream).
  void useStream(CUstream stream) { active_ = stream != nullptr ? stream : stream_; }
  // Work queued on this device's stream from now on waits, on the GPU, for what `other`
  // (0: the legacy default stream) holds now; the calling thread does not wait. Callable
  // from any thread beside the engine's (an event per call).
  Status waitFor(CUstream other);
  const CudaDriver& driver() const { return driver_; }
  // "GPU 0 (NVIDIA H100 80GB HBM3)", for error messages.
  const std::string& description() const { return description_; }

  Status makeCurrent();
  // Device memory of at least `bytes`, valid until the next call (0 bytes: a valid pointer).
  Result<std::byte*> scratch(size_t bytes);
  // `bytes` of device memory of its own, handed over (DeviceBuffer): it holds the primary
  // context retained and is freed in it, so the framework's thread may free it after this
  // device and hvd are shut down. The driver must outlive it (CudaDriver::load()'s does).
  // Taken from this device's memory pool in the stream's order, and given back in the
  // order of the legacy default stream (PyTorch's default stream): after the work queued
  // there, as PyTorch's own allocator frees a tensor. cuMemAlloc and cuMemFree (which
  // waits for the whole device) where the device has no memory pools: with them a 4 KiB
  // allgather from Python took 358 us on an H200, against 73 from the pool.
  Result<DeviceBuffer> allocate(size_t bytes);
  // Page-locked host memory of at least `bytes` (two independent slots), same validity.
  Result<std::byte*> pinned(size_t bytes, int slot);
  // Any direction (unified addressing), queued on the stream.
  Status copyAsync(void* dst, const void* src, size_t bytes);
  // Many copies queued at once: those up to kKernelCopyMax bytes in one launch of the
  // batched-copy kernel (batched_copy.cu) with their list, the rest one copyAsync each; all
  // one copyAsync each where the kernel is not there (built without nvcc, or a driver too
  // old for its PTX). No copy may read another's destination.
  Status copyMany(std::span<const DeviceCopy> copies);
  // Whether copyMany has the kernel (loaded at its first batch); for tests.
  bool copiesInOneLaunch() const { return copyKernel_ != nullptr; }
  // Waits for the stream's work up to `timeout` (kTimeout then: a peer that never joined
  // an NCCL call leaves the stream busy forever). `poll` is asked between waits for an
  // asynchronous error (NCCL's) that ends the wait early.
  Status synchronize(std::chrono::milliseconds timeout, const std::function<Status()>& poll = {});

 private:
  GpuDevice(const CudaDriver& driver, int ordinal) : driver_(driver), ordinal_(ordinal) {}
  const CudaDriver& driver_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;  // the device's own
  std::atomic<CUstream> active_ = nullptr;  // where work goes now (read by waitFor's threads too)
  std::string description_;
  // allocate()'s pool: its memory stays cached up to kPoolKeepBytes between
  // synchronizations (the default's 0 gave every allgather's pages back to the driver).
  // Null where the device has no memory pools.
  static constexpr std::uint64_t kPoolKeepBytes = 256ull << 20;
  CUmemoryPool pool_ = nullptr;
  // copyMany()'s kernel and the lists it reads: written into pinned memory, copied to the
  // device on the stream ahead of the launch. Lists of one stream interval sit side by side
  // (a fusion packs and unpacks before it synchronizes), from listsUsed_ on, back to 0 once
  // the stream is synchronized.
  static constexpr size_t kKernelCopyMax = 256 << 10;
  Status loadCopyKernel();
  bool kernelTried_ = false;
  CUmodule copyModule_ = nullptr;
  CUfunction copyKernel_ = nullptr;
  void* listsHost_ = nullptr;
  CUdeviceptr listsDevice_ = 0;
  size_t listsBytes_ = 0, listsUsed_ = 0;
  CUdeviceptr scratch_ = 0;
  size_t scratchBytes_ = 0;
  void* pinned_[2] = {nullptr, nullptr};
  size_t pinnedBytes_[2] = {0, 0};
};

// GpuDevice::waitFor on `device`, published by the thread that opened it, and true; false
// before any device is open (null) or where it cannot wait for `other` (a stream of another
// GPU): the caller then waits for `other` itself, in its own context.
Result<bool> waitForStream(const std::atomic<GpuDevice*>& device, CUstream other);

}  // namespace hvd::backends::cuda
