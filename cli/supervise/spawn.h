// cli/supervise/spawn.h: starting one supervised process: its pipes, fork, and the child's
// side up to exec. The child runs in a session of its own (so also a process group hvdrun
// and the guardian signal whole), dies with hvdrun (PR_SET_PDEATHSIG), and runs nothing
// before hvdrun has told the guardian its session. Failures name the limit that refused
// them (descriptors, processes) with what to do.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>

#include "cli/supervise/supervision.h"
#include "runtime/common/status.h"

namespace hvd::cli {

struct SpawnRequest {
  const RankProcess* process = nullptr;
  bool stdinPipe = false;  // its stdin a pipe whose write end is returned (a host agent's, a fed rank's)
  size_t processCount = 1;  // the job's processes here, for the limits' messages
  size_t started = 0;       // of which started so far
  // The descriptor limit hvdrun was started with, when it raised its own: the program gets
  // that one (a soft limit past 1024 breaks select()).
  std::optional<rlimit> fileLimit;
  // Called with the child's pid (its session id) before it may run anything (the
  // guardian's watch).
  std::function<void(pid_t)> beforeRun;
};

struct Spawned {
  pid_t pid = -1;
  int stdinFd = -1;  // the write end of its stdin pipe (stdinPipe), non-blocking for agents
  int stdoutFd = -1;
  int stderrFd = -1;
  // The exec failed (the process is started and ends with 127: reap it): why, with a hint.
  Status execFailed = Status::ok();
};

// Forks and execs the process. kSystem when it could not be forked (nothing to reap); with a
// process that started but could not exec its program, Spawned::execFailed.
Result<Spawned> spawnProcess(const SpawnRequest& request);

// Descriptors the supervisor needs for rankCount processes here; raises the soft limit for
// them (up to the hard one) and returns the limit it raised from. kSystem (EMFILE) when the
// job's pipes (and output files) cannot fit even so.
Result<std::optional<rlimit>> reserveDescriptors(size_t rankCount, bool outputFiles);

// Whether this process could hold the descriptors supervising rankCount ranks here needs
// (their pipes, and their output files with outputFiles), once its soft limit is raised to
// the hard one as superviseRanks does. For a caller to ask before it builds anything per
// rank: a typo'd -np 1000000 built a million environments (37 s, 7.5 GB) before failing on
// this limit. kSystem (EMFILE) with the same hint superviseRanks gives.
Status checkDescriptorRoom(size_t rankCount, bool outputFiles);

}  // namespace hvd::cli
