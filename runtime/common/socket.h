// runtime/common/socket.h: TCP sockets with deadlines, and length-prefixed frames. Every
// call that waits takes a deadline and returns kTimeout past it; a peer that closes gives
// kRemote. Used by the rendezvous (client and server) and the TCP transport.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "runtime/common/status.h"

namespace hvd {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Where a listener binds, given the address peers are told: that address when it is an IPv4
// literal (127.0.0.1 for a job on one machine, a --network-interface address, the address an
// ssh launch chose), so only they can reach it; every interface for a host name (its address
// here may differ from what other hosts resolve it to).
std::string listenAddressFor(const std::string& advertised);

inline Deadline deadlineIn(std::chrono::milliseconds timeout) { return Clock::now() + timeout; }

class Socket {
 public:
  Socket() = default;
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Listens on address:port (port 0: any free port; address "" or "0.0.0.0": all).
  static Result<Socket> listen(const std::string& address, int port, int backlog = 512);
  // Resolves host (names via the system's resolver, e.g. /etc/hosts) and connects,
  // retrying refused connections until the deadline (the server may still be starting).
  // Refused connections are retried for at most `refusedFor` (a server that is up, as
  // hvdrun's rendezvous always is before any rank starts, refuses only when it is gone:
  // then the answer comes at once, not at the deadline).
  static Result<Socket> connect(const std::string& host, int port, Deadline deadline,
                                std::chrono::milliseconds refusedFor = std::chrono::milliseconds::max());
  Result<Socket> accept(Deadline deadline) const;

  // Blocks until all bytes are written / read, the deadline passes, or the peer closes.
  Status sendAll(std::string_view data, Deadline deadline) const;
  Status recvAll(char* data, size_t size, Deadline deadline) const;

  // A frame: 4-byte big-endian length, then that many bytes (at most maxSize).
  Status sendFrame(std::string_view payload, Deadline deadline) const;
  Result<std::string> recvFrame(size_t maxSize, Deadline deadline) const;

  int localPort() const;
  std::string peerName() const;  // "10.0.0.5:41234", for messages
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void shutdownBoth() const;  // wakes a thread blocked on this socket

 private:
  explicit Socket(int fd) : fd_(fd) {}
  Status waitFor(short events, Deadline deadline, const char* what) const;
  int fd_ = -1;
};

}  // namespace hvd
