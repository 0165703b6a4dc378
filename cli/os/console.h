// cli/os/console.h: hvdrun's own messages. Writes never throw and never kill hvdrun: its
// exit code is the job's (a rank's code, 129, 130, ...) whether or not anyone still reads
// its output (`hvdrun ... 2>&1 | head -1`, a closed terminal, a killed `| tee`). main()
// ignores SIGPIPE for the same reason; every child hvdrun starts gets it back.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace hvd::cli {

// fmt::print without its exception on a failed write (the output is simply lost).
template <typename... Args>
void printTo(std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  std::string text = fmt::format(format, std::forward<Args>(args)...);
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size()) std::clearerr(out);
}

// `text` with every control byte but newline and tab written as \xNN: an error quotes what
// the user gave (a host file line, an -x token), and an ESC or BEL in it must not move the
// cursor, clear the screen or retitle the terminal of the person reading it.
inline std::string escapeControlBytes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

// Started with stdin, stdout or stderr closed (`2>&-`, some daemons), hvdrun's first
// open would take that number, and its messages would go into a socket or a rank's output
// file: each closed one gets /dev/null first, as OpenSSH and coreutils do.
inline void openMissingStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int devnull = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (devnull >= 0 && devnull != fd) {
      ::dup2(devnull, fd);
      ::close(devnull);
    }
  }
}

}  // namespace hvd::cli
