// runtime/common/regular_file.h: opening a file the user named for reading, only when it
// is a regular file. A pipe would block the open (or the read) until some writer came, a
// device such as /dev/zero never ends, and a directory reads as nothing: each has to be
// refused by what it is, before a single byte is read.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/status.h"

namespace hvd {

// An open descriptor, closed when the object goes; move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// `path` opened read-only (close-on-exec). kNotFound when it does not exist, kSystem when it
// cannot be opened, kInvalidArgument "'PATH' is a pipe, not a regular file" (a directory,
// a device, a socket) with a hint when it is no regular file.
Result<FileDescriptor> openRegularFile(const std::string& path);

// Every byte of `fd` from its current offset; kSystem naming `path` when a read fails, and
// kInvalidArgument "'PATH' is larger than N MiB" past `maxBytes` (read one byte past it, so a
// file that grows while read is caught too).
Result<std::string> readWhole(const FileDescriptor& fd, const std::string& path, size_t maxBytes = SIZE_MAX);

}  // namespace hvd
