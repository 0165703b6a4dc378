// collectives/transport.h: what the algorithms need from a transport, and nothing more:
// one full-duplex step that sends to one peer while receiving from another (the same one
// in a pairwise exchange, the two ring neighbours in a ring step).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::collectives {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends `send` to rank `to` while receiving exactly recv.size() bytes from rank `from`
  // (either may be empty, and then its peer is not looked at). Blocks until both are done,
  // the transport's timeout passes (kTimeout) or a peer fails (kRemote); errors name the
  // peer. `to` and `from` must be peers the transport connected (allreducePeers in
  // collective_peers.h, kInvalidArgument otherwise). Between two ranks each direction is
  // one byte stream, so both must make their calls in the same order. The buffers stay
  // the caller's and must live until the call returns. After an error the transport is
  // poisoned: every later call fails fast with the first error.
  // Not thread-safe: one collective at a time.
  virtual Status exchangeWith(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) = 0;

  // Like exchangeWith, but the recvBytes that arrive are handed to `consume` in order, in
  // pieces of whole `unit`s (at most 16 bytes), instead of landing in a buffer: a transport
  // that receives through shared memory lets the caller reduce straight out of it, saving
  // a copy. `consume` runs on the calling thread, during the call, and must not keep the
  // pointer. The default receives into a scratch buffer and consumes it in one piece.
  using Consumer = std::function<void(std::span<const std::byte>)>;
  virtual Status exchangeWithInto(int to, std::span<const std::byte> send, int from, size_t recvBytes, size_t unit,
                                  const Consumer& consume) {
    (void)unit;
    std::vector<std::byte> scratch(recvBytes);
    HVD_RETURN_IF_ERROR(exchangeWith(to, send, from, scratch));
    if (recvBytes > 0) consume(scratch);
    return Status::ok();
  }

  // Receives data.size() bytes from `from` into `data` and sends each of them on to `to`
  // once it has arrived, while more arrive: the middle of a chain (broadcast). Errors and
  // poisoning as for exchangeWith.
  virtual Status relay(int from, int to, std::span<std::byte> data) = 0;

  // A ring step: to the right neighbour (rank + 1), from the left one (rank - 1).
  int right() const { return (rank() + 1) % size(); }
  int left() const { return (rank() + size() - 1) % size(); }
  Status exchange(std::span<const std::byte> send, std::span<std::byte> recv) {
    return exchangeWith(right(), send, left(), recv);
  }
  Status exchangeInto(std::span<const std::byte> send, size_t recvBytes, size_t unit, const Consumer& consume) {
    return exchangeWithInto(right(), send, left(), recvBytes, unit, consume);
  }
};

}  // namespace hvd::collectives
