// runtime/common/log.cc: level filter and one write per message.
#include "runtime/common/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "runtime/common/ascii_case.h"

namespace hvd {
namespace {

std::atomic<int> currentLevel{static_cast<int>(LogLevel::kWarning)};
std::atomic<int> currentRank{-1};
constexpr std::string_view kNames[] = {"trace", "debug", "info", "warning", "error", "fatal"};

}  // namespace

Result<LogLevel> parseLogLevel(std::string_view text) {
  const std::string lower = asciiLower(text);
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (lower == kNames[i]) return static_cast<LogLevel>(i);
  }
  return Status(Errc::kInvalidArgument, "HOROVOD_LOG_LEVEL='" + std::string(text) + "' is not a log level")
      .withHint("use trace, debug, info, warning (the default), error or fatal");
}

std::string_view logLevelName(LogLevel level) { return kNames[static_cast<size_t>(level)]; }

void configureLog(LogLevel level, int rank) {
  currentLevel.store(static_cast<int>(level));
  currentRank.store(rank);
}

bool logEnabled(LogLevel level) { return static_cast<int>(level) >= currentLevel.load(std::memory_order_relaxed); }

void logMessage(LogLevel level, std::string_view message) {
  if (!logEnabled(level)) return;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string prefix = "hvd: " + std::string(kNames[static_cast<int>(level)]) + ": rank " +
                       std::to_string(currentRank.load()) + " (" + host + ", pid " + std::to_string(::getpid()) + "): ";
  std::string text = prefix;
  for (char c : message) {
    text += c;
    if (c == '\n') text += prefix;
  }
  text += '\n';
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) break;  // stderr gone: nothing else to tell
    done += static_cast<size_t>(n);
  }
}

}  // namespace hvd
