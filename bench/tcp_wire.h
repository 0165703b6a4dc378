// bench/tcp_wire.h: what loopback TCP itself moves on this machine, as a reference for the
// TCP rows.
// A ring of plain sockets (no library of ours, no reduction) on which every rank sends the
// bytes a bandwidth-optimal collective must send and receives what it must receive, both at
// once: for allreduce 2(n-1)/n of the buffer around the ring, for broadcast the whole buffer
// down the chain from rank 0 (the last rank sends nothing, rank 0 receives nothing). Timed
// like a collective and reported with the same busbw formula, its busbw is the rate one
// direction of a busy socket pair sustains. A collective also reduces and synchronises, so
// it should not expect more (within the noise); that says how far a target set as "k times
// Open MPI TCP" is reachable at all.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/common/socket.h"

namespace hvd::bench {

class TcpWire {
 public:
  // Listens on 127.0.0.1, swaps ports with the other ranks through hvd::allgather, then
  // connects to the right neighbour and accepts the left one. Empty error on success.
  std::string open(int rank, int size);
  // Sends `sendBytes` of `out` to the right while receiving `recvBytes` from the left into
  // `in`. Empty on success, else what failed.
  std::string exchange(const std::byte* out, size_t sendBytes, std::byte* in, size_t recvBytes);

 private:
  Socket right_, left_;
};

}  // namespace hvd::bench
