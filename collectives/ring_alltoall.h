// collectives/ring_alltoall.h: Horovod's alltoall over ring neighbours only (the links every
// transport has). Each rank's bundle for the ranks to its right travels the ring, every rank
// taking its own block off the front and passing the rest on: n - 1 steps, each link carrying
// n(n-1)/2 blocks of traffic, half of what an allgather of every rank's whole buffer moves,
// and memory of two bundles at most one rank's send buffer long, instead of everyone's.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collectives/transport.h"

namespace hvd::collectives {

// bytesMatrix[from * size + to]: what rank `from` sends rank `to`, the same matrix on every
// rank (size * size entries). `send` holds this rank's blocks back to back in destination
// order; `out` (the sum of this rank's column) receives the blocks sent to it in source
// order. Blocks may be empty. `scratch` holds the bundles in flight: the caller's, grown
// as needed, so that repeated calls do not fault in fresh pages each time. Blocks; errors
// as Transport::exchangeWith.
Status ringAlltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                     std::vector<std::byte>& scratch);

}  // namespace hvd::collectives
