// runtime/timeline/trace_files.cc: naming and merging per-rank traces.
#include "runtime/timeline/trace_files.h"

#include "runtime/common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace hvd::timeline {
namespace {

// `tag` before the file name's extension (trace.json -> trace<tag>.json), or after a name
// without one.
std::string withTag(const std::string& path, const std::string& tag) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

}  // namespace

std::string rankTracePath(const std::string& path, int rank) {
  if (rank == 0) return path;
  // HOROVOD_TIMELINE=/dev/null: beside it, rank r made /dev/null.rank<r> (as root a stray
  // file in /dev; else a rank that failed at init).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return path;
  return withTag(path, ".rank" + std::to_string(rank));
}

std::string attemptTracePath(const std::string& path, int start) { return withTag(path, ".attempt" + std::to_string(start)); }

std::vector<std::string> existingRankTraces(const std::string& path, int maxRanks) {
  std::vector<std::string> out;
  for (int r = 0; r < maxRanks; ++r) {
    struct stat st {};
    std::string p = rankTracePath(path, r);
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(p);
  }
  return out;
}

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool readAt(int fd, char* buf, size_t n, off_t at) {
  while (n > 0) {
    ssize_t got = ::pread(fd, buf, n, at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got, n -= static_cast<size_t>(got), at += got;
  }
  return true;
}

bool writeAll(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t put = ::write(fd, buf, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    buf += put, n -= static_cast<size_t>(put);
  }
  return true;
}

// The byte range between an array's brackets: [first, last). Reads only the ends of the
// file, so a trace of any size costs the same here.
Result<std::pair<off_t, off_t>> arrayBody(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return systemError("cannot read the trace '" + path + "'");
  auto notArray = [&] {
    return invalidArgument("'" + path + "' is not a Chrome trace in the JSON array format (it should start with '[' and end with ']')");
  };
  const off_t size = st.st_size;
  char buf[4096];
  off_t open = -1, close = -1;
  for (off_t at = 0; at < size && open < 0; at += static_cast<off_t>(sizeof buf)) {
    size_t n = static_cast<size_t>(std::min<off_t>(sizeof buf, size - at));
    if (!readAt(fd, buf, n, at)) return systemError("cannot read the trace '" + path + "'");
    for (size_t i = 0; i < n; ++i) {
      if (isSpace(buf[i])) continue;
      if (buf[i] != '[') return notArray();
      open = at + static_cast<off_t>(i);
      break;
    }
  }
  for (off_t end = size; end > open + 1 && close < 0;) {
    off_t at = std::max<off_t>(open + 1, end - static_cast<off_t>(sizeof buf));
    size_t n = static_cast<size_t>(end - at);
    if (!readAt(fd, buf, n, at)) return systemError("cannot read the trace '" + path + "'");
    for (size_t i = n; i-- > 0;) {
      if (isSpace(buf[i])) continue;
      if (buf[i] != ']') return notArray();
      close = at + static_cast<off_t>(i);
      break;
    }
    end = at;
  }
  if (open < 0 || close < 0) return notArray();
  return std::make_pair(open + 1, close);
}

// Whether [from, to) holds only white space (an array with no events), reading a little.
Result<bool> blank(int fd, off_t from, off_t to, const std::string& path) {
  char buf[4096];
  for (off_t at = from; at < to; at += static_cast<off_t>(sizeof buf)) {
    size_t n = static_cast<size_t>(std::min<off_t>(sizeof buf, to - at));
    if (!readAt(fd, buf, n, at)) return systemError("cannot read the trace '" + path + "'");
    for (size_t i = 0; i < n; ++i) {
      if (!isSpace(buf[i])) return false;
    }
  }
  return true;
}

// Appends every trace's events to `out`, a piece at a time: at exit hvdrun merges every
// rank's file (each up to --timeline-max-mb), so nothing here may hold a whole trace.
Status appendEvents(const std::vector<std::string>& inputs, int out) {
  std::vector<char> piece(1 << 20);
  bool first = true;
  if (!writeAll(out, "[", 1)) return systemError("cannot write the merged trace");
  for (const std::string& in : inputs) {
    auto file = openRegularFile(in);
    if (!file) return file.status();
    const FileDescriptor& fd = *file;
    auto body = arrayBody(fd.get(), in);
    if (!body) return body.status();
    auto [from, to] = *body;
    auto empty = blank(fd.get(), from, to, in);
    if (!empty) return empty.status();
    if (*empty) continue;
    if (!writeAll(out, first ? "\n" : ",\n", first ? 1 : 2)) return systemError("cannot write the merged trace");
    first = false;
    for (off_t at = from; at < to;) {
      size_t n = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(piece.size()), to - at));
      if (!readAt(fd.get(), piece.data(), n, at)) return systemError("cannot read the trace '" + in + "'");
      if (!writeAll(out, piece.data(), n)) return systemError("cannot write the merged trace");
      at += static_cast<off_t>(n);
    }
  }
  if (!writeAll(out, "\n]\n", 3)) return systemError("cannot write the merged trace");
  return Status::ok();
}

}  // namespace

Status mergeTraces(const std::vector<std::string>& inputs, const std::string& output) {
  // The rename below replaces whatever `output` is: a device named as the trace
  // (/dev/null; as root, the node itself), a pipe or a directory must stay what it is.
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return invalidArgument("cannot merge the trace into '" + output + "': not a regular file");
  }
  std::string temporary = output + ".merging";
  Status merged;
  {
    FileDescriptor out(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) return systemError("cannot write the merged trace '" + temporary + "'");
    merged = appendEvents(inputs, out.get());
  }
  if (!merged.isOk()) {
    std::remove(temporary.c_str());
    return merged;
  }
  if (std::rename(temporary.c_str(), output.c_str()) != 0) {
    Status s = systemError("cannot move the merged trace into '" + output + "'");
    std::remove(temporary.c_str());
    return s;
  }
  return Status::ok();
}

}  // namespace hvd::timeline
