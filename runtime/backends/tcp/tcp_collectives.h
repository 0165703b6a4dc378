// runtime/backends/tcp/tcp_collectives.h: the collectives/ ring algorithms over a TcpRing,
// as a CollectiveBackend (HOROVOD_CPU_OPERATIONS=tcp, the default).
#pragma once

#include <memory>

#include "runtime/backends/collective_backend.h"
#include "runtime/backends/tcp/tcp_ring.h"

namespace hvd::backends::tcp {

std::unique_ptr<CollectiveBackend> ringCollectives(std::unique_ptr<TcpRing> ring);

}  // namespace hvd::backends::tcp
