// runtime/backends/tcp/fd_handle.h: a name for an open descriptor that another process of
// the same user on this host can open: "fd:<pid>:<fd>:<dev>:<ino>", through
// /proc/<pid>/fd/<fd>, for as long as the offering process keeps the descriptor open. Nothing
// is named in a file system, so what it refers to (a memfd) cannot outlive the processes
// that hold it, however they die. Ring buffers (shm_link.h) and the host board
// (host_board.h) are offered this way.
#pragma once

#include <string>

#include "runtime/common/status.h"

namespace hvd::backends::tcp {

// The handle of this process's descriptor `fd`; kSystem when fstat fails.
Result<std::string> fdHandle(int fd);

inline bool isFdHandle(const std::string& text) { return text.rfind("fd:", 0) == 0; }

// Opens the file behind `handle` read-write (close-on-exec) and returns the new descriptor.
// kInvalidArgument when malformed; kNotFound when the descriptor cannot be opened or is
// another file (another host, another pid namespace, a non-dumpable process). `what` names
// the file in messages ("the peer's ring buffer").
Result<int> openFdHandle(const std::string& handle, const std::string& what);

}  // namespace hvd::backends::tcp
