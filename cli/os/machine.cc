// cli/os/machine.cc: hostname, a free port, reading a file.
#include "cli/os/machine.h"

#include "runtime/common/cpu_budget.h"
#include "runtime/common/regular_file.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace hvd::cli {

std::string hostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name) != 0 || name[0] == '\0') return "localhost";
  return name;
}

Result<int> freeTcpPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return systemError("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Status s = systemError("finding a free TCP port");
    ::close(fd);
    return s;
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool tcpPortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

std::optional<std::pair<int, int>> ephemeralPortRange() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0, last = 0;
  if (!(in >> first >> last) || first < 1 || last < first || last > 65535) return std::nullopt;
  return std::make_pair(first, last);
}

Result<int> freeTcpPortBlock(int count) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto first = freeTcpPort();
    if (!first) return first.status();
    if (*first + count - 1 > 65535) continue;
    bool all = true;
    for (int port = *first; all && port < *first + count; ++port) all = tcpPortFree(port);
    if (all) return *first;
  }
  return unavailable("no block of " + std::to_string(count) + " free TCP ports found in 50 tries");
}

Result<std::string> readTextFile(const std::string& path) {
  auto file = openRegularFile(path);
  if (!file) return file.status();
  auto content = readWhole(*file, path, kMaxTextFileBytes);
  if (!content && content.status().code() == Errc::kInvalidArgument) {
    return Status(Errc::kInvalidArgument,
                  content.status().message() + ", more than any config, host or template file needs")
        .withHint("check the path");
  }
  return content;
}

Result<std::string> localAddressTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0 || found == nullptr) {
    return notFound("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  sockaddr_in to{};
  std::memcpy(&to, found->ai_addr, sizeof to);
  ::freeaddrinfo(found);
  // Connecting a UDP socket only asks the kernel for a route and a source address.
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return systemError("socket");
  sockaddr_in self{};
  socklen_t length = sizeof self;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &length) == 0;
  int error = errno;
  ::close(fd);
  if (!ok) return unavailable("no route from this machine to " + host + ": " + std::strerror(error));
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &self.sin_addr, text, sizeof text);
  return std::string(text);
}

std::string thisExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "hvdrun";
}

int usableCpuCount() { return usableCores(); }

int onlineCpuCount() {
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online < 1 ? 1 : static_cast<int>(std::min<long>(online, INT_MAX));
}

}  // namespace hvd::cli
