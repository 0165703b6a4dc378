// runtime/backends/tcp/fd_handle.cc
#include "runtime/backends/tcp/fd_handle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hvd::backends::tcp {

Result<std::string> fdHandle(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return systemError("fstat of a descriptor to offer", errno);
  return "fd:" + std::to_string(::getpid()) + ":" + std::to_string(fd) + ":" +
         std::to_string(static_cast<unsigned long long>(info.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(info.st_ino));
}

Result<int> openFdHandle(const std::string& handle, const std::string& what) {
  unsigned long long pid = 0, fd = 0, dev = 0, ino = 0;
  char tail = 0;
  if (std::sscanf(handle.c_str(), "fd:%llu:%llu:%llu:%llu%c", &pid, &fd, &dev, &ino, &tail) != 4) {
    return invalidArgument("malformed shared-memory handle '" + handle + "'");
  }
  // Another process's descriptor, reopened: allowed between processes of one user that may
  // read each other's /proc entries (ptrace read access; Yama restricts only attaching).
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int opened = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (opened < 0) return Status(Errc::kNotFound, "cannot open " + what + " " + path + ": " + std::strerror(errno));
  // The same pid in another pid namespace is another process: the file must be the one offered.
  struct stat info {};
  if (::fstat(opened, &info) != 0 || static_cast<unsigned long long>(info.st_dev) != dev ||
      static_cast<unsigned long long>(info.st_ino) != ino) {
    ::close(opened);
    return Status(Errc::kNotFound, path + " is not " + what + " that was offered");
  }
  return opened;
}

}  // namespace hvd::backends::tcp
