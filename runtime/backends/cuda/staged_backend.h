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

// The opener for the registry: a staged backend over setup.hostBackend. Cheap: the GPU is
// opened at the first GPU tensor. kUnavailable when no GPU is visible (no driver, no device).
Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup);

}  // namespace hvd::backends::cuda
