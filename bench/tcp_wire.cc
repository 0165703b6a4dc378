// bench/tcp_wire.cc: see tcp_wire.h. Deliberately plain: nonblocking send and recv of up to
// 1 MiB per call, kernel-tuned socket buffers, TCP_NODELAY (set-up through runtime/common's
// Socket; the timed path is bare system calls). It spins on the sockets for up to 50 us
// (yielding the core) before sleeping in poll, as our transport does: a wire that slept at
// every empty socket would lose to the collectives it is meant to bound.
#include "bench/tcp_wire.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hvd/hvd.h"

namespace hvd::bench {
namespace {

constexpr size_t kPiece = size_t{1} << 20;
constexpr auto kSpin = std::chrono::microseconds(50);

std::string sysError(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

std::string TcpWire::open(int rank, int size) {
  if (size < 2) return "";
  const Deadline deadline = deadlineIn(std::chrono::seconds(30));
  auto listener = Socket::listen("127.0.0.1", 0, 1);
  if (!listener) return listener.status().message();
  uint16_t mine = static_cast<uint16_t>(listener->localPort());
  std::vector<uint16_t> ports(static_cast<size_t>(size));
  if (auto s = hvd::allgather(&mine, sizeof mine, ports.data()); !s.isOk()) return s.message();
  // Connecting first cannot deadlock: the right rank's listen backlog takes the connection
  // before it calls accept.
  auto right = Socket::connect("127.0.0.1", ports[static_cast<size_t>((rank + 1) % size)], deadline);
  if (!right) return right.status().withContext("connecting to the right rank").message();
  auto left = listener->accept(deadline);
  if (!left) return left.status().withContext("accepting the left rank").message();
  right_ = std::move(*right);
  left_ = std::move(*left);
  tune(right_.fd());
  tune(left_.fd());
  return "";
}

std::string TcpWire::exchange(const std::byte* out, size_t sendBytes, std::byte* in, size_t recvBytes) {
  if (!right_.valid()) return "";
  size_t sent = 0, got = 0;
  auto lastMove = std::chrono::steady_clock::now();
  while (sent < sendBytes || got < recvBytes) {
    bool moved = false;
    if (sent < sendBytes) {
      ssize_t k = ::send(right_.fd(), out + sent, std::min(kPiece, sendBytes - sent), MSG_NOSIGNAL);
      if (k > 0) sent += static_cast<size_t>(k), moved = true;
      else if (k < 0 && errno != EAGAIN && errno != EINTR) return sysError("send");
    }
    if (got < recvBytes) {
      ssize_t k = ::recv(left_.fd(), in + got, std::min(kPiece, recvBytes - got), 0);
      if (k == 0) return "the left rank closed its socket";
      if (k > 0) got += static_cast<size_t>(k), moved = true;
      else if (errno != EAGAIN && errno != EINTR) return sysError("recv");
    }
    auto now = std::chrono::steady_clock::now();
    if (moved) {
      lastMove = now;
      continue;
    }
    if (now - lastMove < kSpin) {
      ::sched_yield();  // more ranks than cores: let the one we wait for run
      continue;
    }
    pollfd fds[2] = {{right_.fd(), static_cast<short>(sent < sendBytes ? POLLOUT : 0), 0},
                     {left_.fd(), static_cast<short>(got < recvBytes ? POLLIN : 0), 0}};
    if (::poll(fds, 2, 30000) == 0) return "no progress for 30 s";
    lastMove = std::chrono::steady_clock::now();
  }
  return "";
}

}  // namespace hvd::bench
