// cli/supervise/rank_failure.h: what is known about a rank that ended a job, and the words
// every report of an end uses ("exited with code 3", "was killed by SIGKILL").
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace hvd::cli {

// How long a rank whose going failed its peers' collectives (its runtime's peer-gone report)
// is left to end by itself before it is stopped with the others, so that its end is its own:
// a SIGTERM handler's last steps after hvd.shutdown(), an exception after hvd's atexit
// shutdown (Python's exit with torch loaded takes ~0.5 s here). At most --kill-grace.
inline constexpr std::chrono::milliseconds kOwnEndWindow{2000};

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
  // srun or mpirun ended badly and neither its messages nor the task shims named a rank (it
  // could not start the job, or lost a node's daemon): its name; `rank` then means nothing.
  std::string launcher;
  // What that launcher's own words say to do (an allocation that ended, a controller that
  // does not answer); empty: its words speak for themselves.
  std::string launcherHint;
  // Processes the kernel's OOM killer ended on the rank's host while it ran (oom_kills.h):
  // a rank killed by a SIGKILL no one sent then most likely ran out of memory.
  std::uint64_t oomKillsOnHost = 0;
  // Elastic training: hvdrun (or its host agent) found it frozen (stopped: SIGSTOP, Ctrl-Z,
  // a debugger) and killed it (SIGKILL) rather than carry it into the next world: when a
  // peer failed (0), or after this many seconds frozen (its peers' HVD_TIMEOUT). -1: not.
  int frozenSeconds = -1;
  // A host agent (launcherProcess) that said nothing for this many seconds while hvdrun
  // listened: frozen (SIGSTOP, a debugger) or its host hung; 0: not so.
  int agentSilentSeconds = 0;
  // The rank whose going failed this one's collectives (its runtime's peer-gone report) had
  // ended with exit code 0: it returned before its peers were done (-1: not so, or unknown;
  // known for ranks hvdrun forks itself).
  int peerEndedCleanly = -1;
};

// How the rank ended: "exited with code 3", "was killed by SIGKILL", or how hvdrun ended a
// frozen one.
std::string endText(const RankFailure& failure);

// "0, 3, 7", the first `limit` of them, then ", ..." when there are more.
std::string rankListText(const std::vector<int>& ranks, size_t limit);

// "SIGKILL" for 9; "signal 77" for numbers without a name.
std::string signalName(int signal);

// Local wall-clock time, ISO 8601 ("2026-11-22T10:15:02+0000"), for failure reports.
std::string nowIso8601();

}  // namespace hvd::cli
