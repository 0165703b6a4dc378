// collectives/transport.h: what the ring algorithms need from a transport, and nothing
// more: one full-duplex step with the two ring neighbours.
#pragma once

#include <cstddef>
#include <span>

#include "runtime/common/status.h"

namespace hvd::collectives {

class RingTransport {
 public:
  virtual ~RingTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends `send` to the right neighbour while receiving exactly recv.size() bytes from the
  // left one (either may be empty). Blocks until both are done, the transport's timeout
  // passes (kTimeout) or a neighbour fails (kRemote); errors name the neighbour. The
  // buffers stay the caller's and must live until the call returns. After an error the
  // transport is poisoned: every later call fails fast with the first error.
  // Not thread-safe: one collective at a time.
  virtual Status exchange(std::span<const std::byte> send, std::span<std::byte> recv) = 0;
};

}  // namespace hvd::collectives
