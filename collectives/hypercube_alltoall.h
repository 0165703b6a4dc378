// collectives/hypercube_alltoall.h: Horovod's alltoall on a power-of-two rank count over the
// halving partners every transport links (rank ^ 1, rank ^ 2, ...): at each of log2(n)
// steps a rank hands its partner every block it holds whose destination lies across that
// bit, so each block crosses one link per bit in which its two ranks differ. Each rank sends
// log2(n) / 2 times its buffer in all, against (n - 1) / 2 times on the ring (ring_alltoall.h)
// and (n - 1) / n sending each block straight to its rank: with blocks of one size, 4 blocks
// against the ring's 6 at 4 ranks, 2304 against 130816 at 512.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "collectives/transport.h"

namespace hvd::collectives {

// As ringAlltoallv (ring_alltoall.h), on a rank count that is a power of two
// (kInvalidArgument otherwise). `scratch` holds the packed blocks going out and the blocks
// that arrived and are still to be passed on: the caller's, grown as needed.
Status hypercubeAlltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                          std::vector<std::byte>& scratch);

// The alltoall for the rank count: the hypercube's from 4 ranks on powers of two, else the ring.
Status alltoallv(Transport& t, const void* send, std::span<const size_t> bytesMatrix, void* out,
                 std::vector<std::byte>& scratch);

}  // namespace hvd::collectives
