// cli/os/oom_kills.cc: /proc/vmstat's oom_kill line.
#include "cli/os/oom_kills.h"

#include <charconv>
#include <fstream>
#include <sstream>

namespace hvd::cli {

std::optional<std::uint64_t> oomKillsIn(std::string_view vmstat) {
  constexpr std::string_view kKey = "oom_kill ";
  size_t at = 0;
  while (at < vmstat.size()) {
    size_t end = vmstat.find('\n', at);
    std::string_view line = vmstat.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line.substr(0, kKey.size()) == kKey) {
      std::string_view digits = line.substr(kKey.size());
      std::uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
      return value;
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> kernelOomKills() {
  std::ifstream in("/proc/vmstat");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return oomKillsIn(text.str());
}

}  // namespace hvd::cli
