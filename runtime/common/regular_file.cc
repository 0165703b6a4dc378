// runtime/common/regular_file.cc: see regular_file.h.
#include "runtime/common/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hvd {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FileDescriptor> openRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait for one; the check below refuses it.
  // On a regular file the flag changes nothing.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    int error = errno;
    return error == ENOENT ? notFound("'" + path + "' does not exist")
                           : systemError("cannot read '" + path + "'", error);
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return systemError("cannot read '" + path + "'");
  if (!S_ISREG(info.st_mode)) {
    const char* kind = S_ISDIR(info.st_mode)                             ? "a directory"
                       : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device"
                       : S_ISFIFO(info.st_mode)                          ? "a pipe"
                       : S_ISSOCK(info.st_mode)                          ? "a socket"
                                                                         : "no regular file";
    return Status(Errc::kInvalidArgument, "'" + path + "' is " + kind + ", not a regular file")
        .withHint("give the path of a regular file");
  }
  return fd;
}

Result<std::string> readWhole(const FileDescriptor& fd, const std::string& path, size_t maxBytes) {
  std::string content;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return systemError("cannot read '" + path + "'");
    if (n == 0) return content;
    content.append(buf, static_cast<size_t>(n));
    if (content.size() > maxBytes) {
      return invalidArgument("'" + path + "' is larger than " + std::to_string(maxBytes >> 20) + " MiB");
    }
  }
}

}  // namespace hvd
