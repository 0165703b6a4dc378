// runtime/backends/nccl/nccl_backend.h: GPU tensors through NCCL. The communicator is made
// at the first GPU collective, on the GPU that tensor lives on: rank 0 draws NCCL's unique
// id and sends it to the others over the host backend (the rendezvous is gone by then),
// then every rank joins. Each call runs on the backend's own stream and returns when that
// work is done; a peer that died or never joins fails the call after HVD_TIMEOUT (the
// communicator is aborted, so NCCL's threads do not hang the process), never a hang.
#pragma once

#include <memory>

#include "runtime/backends/backend_factory.h"
#include "runtime/backends/collective_backend.h"

namespace hvd::backends::nccl {

// The opener for the registry. Cheap (loads libnccl and the driver; no communicator yet).
// kUnavailable naming the missing library or GPU.
Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup);

}  // namespace hvd::backends::nccl
