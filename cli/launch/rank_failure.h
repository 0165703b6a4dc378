// cli/launch/rank_failure.h: what is known about the rank that ended a job.
#pragma once

#include <deque>
#include <string>

namespace hvd::cli {

struct RankFailure {
  int rank = 0;
  std::string host;
  int pid = 0;
  int exitCode = 0;  // when signal == 0
  int signal = 0;
  std::string when;                        // local wall-clock time, ISO 8601
  std::deque<std::string> lastStderrLines;  // the rank's final stderr lines
  // An ssh launch's host agent (or its ssh) ended badly without a rank's report; `rank` is
  // only the first of the ranks it stood for.
  bool launcherProcess = false;
};

}  // namespace hvd::cli
