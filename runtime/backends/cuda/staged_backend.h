// runtime/backends/cuda/staged_backend.h: GPU tensors through host memory. Each collective
// copies the device buffer into pinned host memory, runs the host backend (hvd's shared-
// memory/TCP ring or MPI) there, and copies the result back. Slower than NCCL (two PCIe
// crossings), but it needs only the driver, works when ranks share one GPU (NCCL refuses
// that), and is what HOROVOD_GPU_OPERATIONS=cpu asks for.
#pragma once

#include <memory>

#include "runtime/backends/backend_factory.h"
#include "runtime/backends/collective_backend.h"

namespace hvd::backends::cuda {

// The device side of staging. The driver's GPU in production; tests on machines without
// a GPU give host memory with memcpy, so the staging logic and the engine's device paths
// run everywhere. Calls come one at a time (the engine serialises them).
class StagingDevice {
 public:
  virtual ~StagingDevice() = default;
  // Called with each tensor's pointer (nullptr when a call has none): the first picks the
  // device; a tensor on another device is kInvalidUsage.
  virtual Status select(const void* pointer) = 0;
  // Page-locked host memory (two independent slots) and device scratch, growing; valid
  // until the next call for the same slot.
  virtual Result<std::byte*> pinned(size_t bytes, int slot) = 0;
  virtual Result<std::byte*> scratch(size_t bytes) = 0;
  // Device memory handed over to the caller (CollectiveBackend::allocate).
  virtual Result<DeviceBuffer> allocate(size_t bytes) = 0;
  // Queued copies in any direction, and the wait for them (up to the job's timeout).
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // copy() of each, queued as one where the device can.
  virtual Status copyMany(std::span<const DeviceCopy> copies) {
    for (const DeviceCopy& c : copies) HVD_RETURN_IF_ERROR(copy(c.dst, c.src, c.bytes));
    return Status::ok();
  }
  virtual Status finish() = 0;
  // Later copies go to this CUDA stream (nullptr: the device's own).
  virtual void useStream(void* stream) { (void)stream; }
  // CollectiveBackend::waitForStream, from the submitting thread.
  virtual Result<bool> waitForStream(void* stream) {
    (void)stream;
    return false;
  }
};

// A staged backend over `device`, running the collectives on `host` (which must outlive it);
// `rank`: this rank's place in the host backend's world (the size of its reducescatter part
// and of what its alltoall receives).
std::unique_ptr<CollectiveBackend> makeStagedBackend(std::unique_ptr<StagingDevice> device, CollectiveBackend& host,
                                                     int rank);

// The opener for the registry: the staged path on the driver's GPU over setup.hostBackend.
// Cheap: the GPU is opened at the first GPU tensor. kUnavailable when no GPU is visible.
Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup);

}  // namespace hvd::backends::cuda
