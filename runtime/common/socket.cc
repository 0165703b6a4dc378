// runtime/common/socket.cc: poll-based waits on non-blocking sockets.
#include "runtime/common/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace hvd {

std::string listenAddressFor(const std::string& advertised) {
  in_addr parsed{};
  return ::inet_pton(AF_INET, advertised.c_str(), &parsed) == 1 ? advertised : "0.0.0.0";
}
namespace {

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Result<Socket> Socket::listen(const std::string& address, int port, int backlog) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return systemError("socket");
  Socket s(fd);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (address.empty() || address == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return invalidArgument("cannot listen on '" + address + "': not an IPv4 address");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return systemError("cannot listen on " + (address.empty() ? "0.0.0.0" : address) + ":" + std::to_string(port));
  }
  if (::listen(fd, backlog) != 0) return systemError("listen");
  setNonBlocking(fd);
  return s;
}

Result<Socket> Socket::connect(const std::string& host, int port, Deadline deadline, std::chrono::milliseconds refusedFor) {
  const Clock::time_point started = Clock::now();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return unavailable("cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  }
  sockaddr_in target = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  std::string name = host + ":" + std::to_string(port);
  while (true) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return systemError("socket");
    Socket s(fd);
    setNonBlocking(fd);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof target);
    int error = rc == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
      Status waited = s.waitFor(POLLOUT, deadline, "connecting");
      if (!waited.isOk()) return waited.withContext("connecting to " + name);
      socklen_t len = sizeof error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    }
    if (error == 0) return s;
    bool refusedTooLong = Clock::now() - started >= refusedFor;
    if ((error != ECONNREFUSED && error != ECONNRESET) || Clock::now() >= deadline || refusedTooLong) {
      return Clock::now() >= deadline ? Status(Errc::kTimeout, "connecting to " + name + ": no answer before the deadline")
                                      : systemError("connecting to " + name, error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the server may be starting
  }
}

Result<Socket> Socket::accept(Deadline deadline) const {
  while (true) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return Socket(fd);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return systemError("accept");
    HVD_RETURN_IF_ERROR(waitFor(POLLIN, deadline, "accepting"));
  }
}

Status Socket::waitFor(short events, Deadline deadline, const char* what) const {
  while (true) {
    pollfd p{fd_, events, 0};
    int rc = ::poll(&p, 1, remainingMs(deadline));
    if (rc > 0) return Status::ok();
    if (rc == 0) return Status(Errc::kTimeout, std::string(what) + ": timed out");
    if (errno != EINTR) return systemError(what);
  }
}

Status Socket::sendAll(std::string_view data, Deadline deadline) const {
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      HVD_RETURN_IF_ERROR(waitFor(POLLOUT, deadline, "sending"));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return Status(Errc::kRemote, "the peer closed the connection");
    return systemError("send");
  }
  return Status::ok();
}

Status Socket::recvAll(char* data, size_t size, Deadline deadline) const {
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::recv(fd_, data + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Status(Errc::kRemote, "the peer closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      HVD_RETURN_IF_ERROR(waitFor(POLLIN, deadline, "receiving"));
      continue;
    }
    if (errno == ECONNRESET) return Status(Errc::kRemote, "the peer reset the connection");
    return systemError("recv");
  }
  return Status::ok();
}

Status Socket::sendFrame(std::string_view payload, Deadline deadline) const {
  uint32_t size = static_cast<uint32_t>(payload.size());
  char header[4] = {static_cast<char>(size >> 24), static_cast<char>(size >> 16), static_cast<char>(size >> 8),
                    static_cast<char>(size)};
  HVD_RETURN_IF_ERROR(sendAll(std::string_view(header, 4), deadline));
  return sendAll(payload, deadline);
}

Result<std::string> Socket::recvFrame(size_t maxSize, Deadline deadline) const {
  unsigned char header[4];
  HVD_RETURN_IF_ERROR(recvAll(reinterpret_cast<char*>(header), 4, deadline));
  uint32_t size = uint32_t(header[0]) << 24 | uint32_t(header[1]) << 16 | uint32_t(header[2]) << 8 | header[3];
  if (size > maxSize) {
    return invalidArgument("a frame of " + std::to_string(size) + " bytes exceeds the limit of " + std::to_string(maxSize));
  }
  std::string payload(size, '\0');
  HVD_RETURN_IF_ERROR(recvAll(payload.data(), size, deadline));
  return payload;
}

int Socket::localPort() const {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return ntohs(addr.sin_port);
}

std::string Socket::peerName() const {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown peer";
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

void Socket::shutdownBoth() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace hvd
