// runtime/backends/tcp/host_allreduce.h: one call through the host's arena (host_arena.h),
// waiting for the other ranks as the transport waits for its peers (spin, sleep, a dead
// peer noticed on the links, the transport's timeout).
#pragma once

#include <span>

#include "collectives/combine_allreduce.h"
#include "runtime/backends/tcp/host_arena.h"
#include "runtime/backends/tcp/tcp_transport.h"

namespace hvd::backends::tcp {

// In place, `data` at most arena.capacity() bytes (empty: a barrier); every rank of the job
// on this host makes the same calls in the same order. An error poisons `t`, and a poisoned
// `t` fails at once with its first error.
Status hostAllreduce(HostArena& arena, TcpTransport& t, std::span<std::byte> data,
                     const collectives::Combine& combine);

}  // namespace hvd::backends::tcp
