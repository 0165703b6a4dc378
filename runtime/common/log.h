// runtime/common/log.h: the runtime's one logger. Silent on success: warnings and errors
// only by default; HOROVOD_LOG_LEVEL (trace, debug, info, warning, error, fatal) chooses.
// Each message is one write(2) of whole lines prefixed "hvd: <level>: rank R (host, pid P): ",
// so lines from threads and ranks never interleave mid-line. Thread-safe.
#pragma once

#include <string_view>

#include "runtime/common/status.h"

namespace hvd {

enum class LogLevel { kTrace, kDebug, kInfo, kWarning, kError, kFatal };

// "trace" .. "fatal" (any case); kInvalidArgument naming the value otherwise.
Result<LogLevel> parseLogLevel(std::string_view text);
// "trace" .. "fatal": the name parseLogLevel reads back.
std::string_view logLevelName(LogLevel level);
// Set at init; the rank goes in every prefix (-1 before the rank is known).
void configureLog(LogLevel level, int rank);
bool logEnabled(LogLevel level);
void logMessage(LogLevel level, std::string_view message);

}  // namespace hvd
