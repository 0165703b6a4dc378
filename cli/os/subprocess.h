// cli/os/subprocess.h: run a program to completion and capture what it printed.
// For short probes (`srun --version`) and tests, not for ranks (see launch/supervisor.h).
// The program is exec'd directly (no shell) and killed when its deadline passes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::cli {

struct CapturedRun {
  int exitCode = -1;      // valid when !signaled
  int signal = 0;         // the signal that ended it, 0 if it exited
  bool timedOut = false;  // killed by us at the deadline
  std::string out;
  std::string err;
  bool succeeded() const { return !signaled() && !timedOut && exitCode == 0; }
  bool signaled() const { return signal != 0; }
};

struct RunOptions {
  std::chrono::milliseconds timeout{5000};
  std::optional<std::vector<std::string>> env;  // replaces the environment when set
  std::string stdinText;                        // written to the program's stdin
};

// Blocks until the program ends or the timeout passes (then SIGKILLs its process group).
// argv[0] is looked up in PATH (of `env` when given). Returns kNotFound when it cannot be
// executed at all, kSystem when fork/pipe fail; a non-zero exit is a successful capture.
Result<CapturedRun> runAndCapture(const std::vector<std::string>& argv, const RunOptions& options = {});

// Starts the program with nothing of hvdrun's (stdin, stdout and stderr on /dev/null, no
// signal blocked) and does not wait: whoever reaps hvdrun's children reaps it. Its pid, or
// kNotFound/kSystem as above. For a fire-and-forget order whose outcome changes nothing.
Result<int> startDetached(const std::vector<std::string>& argv);

// Where programs are looked up, as execvp and the shell look: this process's PATH, or, when
// it is unset (env -i, a bare service), the system's default (confstr _CS_PATH,
// "/bin:/usr/bin").
std::string searchPath();

// The executable file argv0 names: as given when it contains '/', else the first match in
// `path` (a PATH-style list). kNotFound names the program and where it looked.
Result<std::string> findExecutable(const std::string& argv0, const std::string& path);

// What keeps the kernel from running a script, read from its "#!" line: an interpreter that
// does not exist or cannot be run, or a line ending in '\r' (Windows line ends: the kernel
// looks for "/bin/sh\r"). exec then fails with a bare ENOENT, naming neither, though the
// script itself is right there. nullopt: no "#!" line, or nothing wrong with it.
std::optional<std::string> interpreterProblem(const std::string& executable);

// NAME's value in a "NAME=value" list (a process's environment); empty when it is not there.
std::string valueInEnvironment(const std::vector<std::string>& env, const std::string& name);

// After fork: a child whose exec fails writes its errno to a close-on-exec pipe, which a
// successful exec closes instead. Reads that pipe's end (and closes it): the errno, or 0
// when the exec succeeded.
int execErrorFrom(int fd);

}  // namespace hvd::cli
