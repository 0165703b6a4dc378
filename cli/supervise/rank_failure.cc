// cli/supervise/rank_failure.cc: the words for a rank's end.
#include "cli/supervise/rank_failure.h"

#include <fmt/format.h>

#include <cstring>
#include <ctime>

namespace hvd::cli {

std::string endText(const RankFailure& f) {
  if (f.frozenSeconds == 0) return "was frozen (stopped, state T) when a peer failed, and hvdrun killed it";
  if (f.frozenSeconds > 0) {
    return fmt::format("was frozen (stopped, state T) for {} s, as long as its peers wait in a collective "
                       "(HVD_TIMEOUT), and hvdrun killed it", f.frozenSeconds);
  }
  return f.signal != 0 ? fmt::format("was killed by {}", signalName(f.signal))
                       : fmt::format("exited with code {}", f.exitCode);
}

std::string rankListText(const std::vector<int>& ranks, size_t limit) {
  std::string list;
  for (size_t i = 0; i < ranks.size() && i < limit; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > limit) list += ", ...";
  return list;
}

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

std::string nowIso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

}  // namespace hvd::cli
