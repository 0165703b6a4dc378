// cli/supervise/guardian.h: a small process that outlives hvdrun, so that a killed hvdrun
// (SIGKILL, OOM killer, a crash) still takes every rank's whole process tree with it.
// PR_SET_PDEATHSIG reaches a rank's first process only; a rank behind a shell wrapper
// (`sh -c 'python train.py'`, `conda run`, `bash train.sh`) would live on. The guardian
// holds the read end of a pipe whose write end only hvdrun has: when it reads EOF without
// hvdrun's goodbye, hvdrun is gone, and it SIGKILLs every rank's session (each rank runs
// in its own, supervisor.h), removes the job's /dev/shm objects (shm_names.h) and the
// directories hvdrun named to it.
//
// Covered: every process that stays in the rank's session (any depth of shells, forks,
// process groups). Not covered: a descendant that calls setsid() itself (a daemon), which
// hvdrun stops itself at a job's end (adopted_orphans.h) but not once it is SIGKILLed;
// only a cgroup could find it then, and none is assumed writable. docs/hvdrun.md says so.
#pragma once

#include <sys/types.h>

#include <string>

#include "runtime/common/status.h"

namespace hvd::cli {

class Guardian {
 public:
  // Forks the guardian. Call before any thread starts, so the child is a clean copy.
  static Result<Guardian> start(std::string shmPrefix);

  Guardian(Guardian&& other) noexcept;
  Guardian& operator=(Guardian&&) = delete;
  Guardian(const Guardian&) = delete;
  ~Guardian();  // without release(): the guardian acts as if hvdrun had died

  // A rank started as the leader of session `session` (its pid).
  void watch(pid_t session);
  // A directory of the job's (the ranks' error files): removed, with what is in it, if
  // hvdrun dies before release(); hvdrun removes it itself otherwise.
  void removeIfOrphaned(const std::string& directory);
  // The ranks watched so far were reaped and their sessions killed: forgotten, while the
  // guardian stays for the ranks of a restart.
  void forget();
  // The job ended under hvdrun's own eyes: the guardian leaves without doing anything.
  void release();
  pid_t pid() const { return pid_; }

 private:
  Guardian(int fd, pid_t pid) : fd_(fd), pid_(pid) {}
  void send(const std::string& line);
  int fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace hvd::cli
