// runtime/backends/tcp/tcp_collectives.h: the collectives/ algorithms over a TcpTransport, as
// a CollectiveBackend (HOROVOD_CPU_OPERATIONS=tcp, the default).
#pragma once

#include <memory>

#include "collectives/allreduce.h"
#include "runtime/backends/collective_backend.h"
#include "runtime/backends/tcp/contention_pin.h"
#include "runtime/backends/tcp/host_arena.h"
#include "runtime/backends/tcp/tcp_transport.h"

namespace hvd::backends::tcp {

// `algorithm` picks the allreduce (HVD_ALLREDUCE_ALGORITHM); the rest are ring algorithms.
// With an arena (every rank of the job on one host, each with its own; given only with
// kAuto, since it runs recursive doubling's tree whatever the rank count), small allreduces,
// the engine's agreements and barriers go through it (host_allreduce.h) instead. With a
// pin, each data collective first lets it place its calling thread (contention_pin.h).
std::unique_ptr<CollectiveBackend> ringCollectives(std::unique_ptr<TcpTransport> ring,
                                                   collectives::AllreduceAlgorithm algorithm,
                                                   std::unique_ptr<HostArena> arena = nullptr,
                                                   std::unique_ptr<ContentionPin> pin = nullptr);

}  // namespace hvd::backends::tcp
