// collectives/transport.h: what the ring algorithms need from a transport, and nothing
// more: one full-duplex step with the two ring neighbours.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

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

  // Like exchange, but the recvBytes that arrive are handed to `consume` in order, in
  // pieces of whole `unit`s (at most 16 bytes), instead of landing in a buffer: a transport
  // that receives through shared memory lets the caller reduce straight out of it, saving
  // a copy. `consume` runs on the calling thread, during the call, and must not keep the
  // pointer. The default receives into a scratch buffer and consumes it in one piece.
  using Consumer = std::function<void(std::span<const std::byte>)>;
  virtual Status exchangeInto(std::span<const std::byte> send, size_t recvBytes, size_t unit, const Consumer& consume) {
    (void)unit;
    std::vector<std::byte> scratch(recvBytes);
    HVD_RETURN_IF_ERROR(exchange(send, scratch));
    if (recvBytes > 0) consume(scratch);
    return Status::ok();
  }
};

}  // namespace hvd::collectives
