// tests/support/hvdrun_runner.h: runs the real hvdrun binary the way a user would, and
// helpers to check what it left behind.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cli/os/subprocess.h"
#include "tests/support/skip.h"

namespace hvd::test {

// Runs hvdrun with these arguments (argv[0] excluded). Fails the test if it cannot start.
cli::CapturedRun runHvdrun(const std::vector<std::string>& args, const cli::RunOptions& options = {});

// Whether Open MPI's mpirun is in PATH (the --mpi cases need it).
bool haveMpirun();

// Run options with a replaced environment, or a longer deadline.
cli::RunOptions withEnv(std::vector<std::string> env);
cli::RunOptions withTimeout(std::chrono::milliseconds timeout);

// The current environment with some variables replaced ("NAME=value") or removed ("NAME").
std::vector<std::string> environmentWith(const std::vector<std::string>& changes);

// Starts hvdrun in the background; its stdout goes to stdoutFd and its stderr to stderrFd
// (each discarded when -1), its stdin is stdinFd (-1: this process's). Returns its pid;
// the caller kills and reaps it. With asShellJob, hvdrun leads a process group of its own,
// as a job-control shell starts a job: its group is then not orphaned (this process, its
// parent, is in another group of the session), so SIGTSTP stops it, wherever the test
// itself was started from.
int spawnHvdrun(const std::vector<std::string>& args, const std::vector<std::string>& env, int stdoutFd = -1,
                bool asShellJob = false, int stderrFd = -1, int stdinFd = -1);

// Everything left to read from fd (a pipe's read end) until its writers are gone; closes fd.
std::string readToEnd(int fd);

// hvdrun's stderr without its note on thread defaults ("hvdrun: N ranks share C CPU(s):
// OMP_NUM_THREADS=..."), for tests that compare stderr whole.
std::string withoutThreadNote(const std::string& err);

// The lengths of rank `rank`'s stdout lines in hvdrun's output, without the "[N]<stdout>:"
// prefix, in order (for tests of where long lines are cut).
std::vector<size_t> stdoutLineLengths(const std::string& out, int rank);

// What `hvd_collective_rank traffic` printed: each rank's bytes moved over its host's
// network interfaces ("[N]<stdout>:traffic R BYTES"), by rank.
std::map<int, unsigned long long> networkTrafficByRank(const std::string& out);

// This machine's hostname, as hvdrun sees it.
std::string hostName();

// /proc/PID/stat's state letter (R, S, D, T stopped, Z, ...), '?' when there is no such process.
char processState(int pid);

// True when no live process has this pid (zombies count as gone: init may reap late).
bool processGone(int pid);

// Waits up to `limit` for every pid to be gone; returns those still alive then.
std::vector<int> survivorsAfter(const std::vector<int>& pids, std::chrono::milliseconds limit);

// A fresh directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Pids from the <rank>.pid files a test_rank wrote into dir.
std::vector<int> readPidFiles(const std::string& dir);

// The number (from 1) of the last line of the file at path that contains text; 0 if none.
int lineContaining(const std::string& path, const std::string& text);

}  // namespace hvd::test
