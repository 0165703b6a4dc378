// cli/os/console.h: hvdrun's own messages. Writes never throw and never kill hvdrun: its
// exit code is the job's (a rank's code, 129, 130, ...) whether or not anyone still reads
// its output (`hvdrun ... 2>&1 | head -1`, a closed terminal, a killed `| tee`). main()
// ignores SIGPIPE for the same reason; every child hvdrun starts gets it back.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <utility>

namespace hvd::cli {

// fmt::print without its exception on a failed write (the output is simply lost).
template <typename... Args>
void printTo(std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  std::string text = fmt::format(format, std::forward<Args>(args)...);
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size()) std::clearerr(out);
}

}  // namespace hvd::cli
