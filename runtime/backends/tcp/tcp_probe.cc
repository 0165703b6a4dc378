// runtime/backends/tcp/tcp_probe.cc: the TCP backend is usable when a loopback socket can
// be bound and listened on, which is all its rendezvous and ring need locally.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/backends/backend_probe.h"

namespace hvd::backends::tcp {

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = "POSIX sockets";
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    result.reason = std::string("cannot create a TCP socket: ") + std::strerror(errno);
    return result;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 1) != 0) {
    result.reason = std::string("cannot listen on 127.0.0.1: ") + std::strerror(errno);
  } else {
    result.usable = true;
    result.runVersion = "a loopback listener";
  }
  ::close(fd);
  return result;
}

}  // namespace hvd::backends::tcp
