// cli/supervise/spawn.cc: pipes, fork and exec, and the limits that refuse them.
#include "cli/supervise/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "cli/os/inherited_signals.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"

namespace hvd::cli {
namespace {

// Per rank started here: its stdout and stderr pipes stay open while it runs, and its
// rendezvous connection; set-up briefly needs two more pipes.
size_t descriptorsNeeded(size_t rankCount) { return rankCount * 4 + 64; }

// Held for the whole job: each rank's two pipes, and its two files with --output-filename.
size_t descriptorsHeld(size_t rankCount, bool outputFiles) { return rankCount * (outputFiles ? 4 : 2) + 64; }

rlim_t softDescriptorLimit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

// mayOpen: the limit the job met (ENFILE: the system's table, not a limit of this process).
Status outOfDescriptors(Status s, size_t rankCount, int error, rlim_t mayOpen) {
  return s.withHint("hvdrun needs about " + std::to_string(descriptorsNeeded(rankCount)) + " file descriptors for " +
                    std::to_string(rankCount) + " ranks on this machine, and this process may open " +
                    (error == ENFILE ? "(the system's table is full) " : std::to_string(mayOpen) + " ") +
                    "(ulimit -n); raise the limit or start fewer ranks here");
}

// The cgroup's pids.max of this process (cgroup v2), when it sets one.
std::optional<long> cgroupPidLimit() {
  auto self = readTextFile("/proc/self/cgroup");
  if (!self) return std::nullopt;
  const std::string& text = *self;
  const size_t start = text.rfind("0::");
  if (start == std::string::npos) return std::nullopt;
  std::string path = text.substr(start + 3, text.find('\n', start) - start - 3);
  auto max = readTextFile("/sys/fs/cgroup" + path + "/pids.max");
  if (!max || max->rfind("max", 0) == 0) return std::nullopt;
  try {
    return std::stol(*max);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A fork refused with EAGAIN: the limits that refuse it, said with their values (a bare
// "Resource temporarily unavailable" sends people to look at memory).
Status forkRefused(Status s, size_t started, size_t rankCount) {
  std::string limits;
  rlimit procs{};
  if (::getrlimit(RLIMIT_NPROC, &procs) == 0 && procs.rlim_cur != RLIM_INFINITY) {
    limits = "this user may run " + std::to_string(procs.rlim_cur) + " processes at once (ulimit -u)";
  }
  if (auto pids = cgroupPidLimit()) {
    limits += (limits.empty() ? "this process's cgroup may hold " : ", its cgroup ") + std::to_string(*pids) +
              " (pids.max)";
  }
  if (limits.empty()) limits = "the system is out of processes (kernel.pid_max, kernel.threads-max)";
  return s.withHint(limits + "; " + std::to_string(started) + " ranks of " + std::to_string(rankCount) +
                    " had started; raise the limit or start fewer ranks here");
}

// The signals the supervisor takes through its signalfd: blocked in hvdrun, and given back
// their defaults in the child.
const int kSupervisedSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The child side of fork: never returns. Reports an exec failure's errno on errorFd. argv and
// envp are made before fork: the child of a process with threads calls nothing that
// allocates.
[[noreturn]] void becomeRank(const RankProcess& spec, char* const* argv, char* const* envp, const cpu_set_t* cpus,
                             int inFd, int outFd, int errFd, int errorFd, int goFd, pid_t parent,
                             const rlimit* fileLimit) {
  // A session of its own (so also a process group hvdrun and the guardian signal whole): the
  // kernel's autogroup scheduler then shares the CPU per rank, as under torchrun, not per
  // hvdrun session (ranks sharing one were scheduled 1.35-1.8x slower under load).
  ::setsid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(127);  // hvdrun died before the line above took effect
  // Nothing runs before hvdrun has told the guardian about this session: otherwise a hvdrun
  // killed in between leaves the program's children (behind a shell) unknown to it.
  char go = 0;
  ssize_t got;
  do {
    got = ::read(goFd, &go, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1) _exit(127);  // hvdrun died first
  if (inFd >= 0) ::dup2(inFd, STDIN_FILENO);
  if (spec.emptyStdin) {
    int none = ::open("/dev/null", O_RDONLY);
    if (none < 0 || ::dup2(none, STDIN_FILENO) < 0) {
      int error = errno;
      (void)!::write(errorFd, &error, sizeof error);  // reported as the exec's failure
      _exit(127);
    }
    if (none != STDIN_FILENO) ::close(none);
  }
  // Planned from CPUs hvdrun may use, so this fails only if they went offline meanwhile: then
  // the rank runs unpinned, as with --bind-to none.
  if (cpus != nullptr) (void)::sched_setaffinity(0, sizeof *cpus, cpus);
  ::dup2(outFd, STDOUT_FILENO);
  ::dup2(errFd, STDERR_FILENO);
  // Dispositions set to "ignore" and the blocked mask survive exec: give the program the
  // defaults it expects.
  for (int sig : kSupervisedSignals) ::signal(sig, SIG_DFL);
  restoreIgnoredSignals();
  if (fileLimit != nullptr) (void)::setrlimit(RLIMIT_NOFILE, fileLimit);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(spec.executable.c_str(), argv, envp);
  int error = errno;
  (void)!::write(errorFd, &error, sizeof error);
  _exit(127);
}

// A pipe for the process; out of descriptors, the error says how many a job this size needs.
Status openPipe(int fds[2], const SpawnRequest& request) {
  if (::pipe2(fds, O_CLOEXEC) == 0) return Status::ok();
  int error = errno;
  Status s = systemError("pipe for rank " + std::to_string(request.process->rank), error);
  if (error != EMFILE && error != ENFILE) return s;
  return outOfDescriptors(s, request.processCount, error, softDescriptorLimit());
}

// Why exec failed, with what to do about it.
Status execFailure(const RankProcess& spec, int error) {
  Status failed = systemError("cannot start rank " + std::to_string(spec.rank) + " (" + spec.executable + ")", error);
  // A script without a "#!" line: a shell would run it with itself, exec does not.
  if (error == ENOEXEC) {
    failed = failed.withHint("it is neither a program nor a script with a #! line: make its first line #!/bin/bash "
                             "(or its interpreter's), or name the interpreter: hvdrun -np N bash " +
                             spec.executable);
  }
  // hvdrun's own arguments and environment fitted; the rank's, with the variables hvdrun
  // adds (or one over the kernel's 128 KiB for a single string), did not.
  if (error == E2BIG) {
    size_t bytes = 0, largest = 0;
    for (const auto& s : spec.argv) bytes += s.size() + 1 + sizeof(char*);
    for (const auto& s : spec.env) {
      bytes += s.size() + 1 + sizeof(char*);
      largest = std::max(largest, s.size());
    }
    failed = failed.withHint("the rank's arguments and environment take " + std::to_string(bytes >> 10) +
                             " KiB (the largest variable " + std::to_string(largest >> 10) +
                             " KiB), with the variables hvdrun adds; the kernel allows " +
                             std::to_string(::sysconf(_SC_ARG_MAX) >> 10) +
                             " KiB in all and 128 KiB per string: unset large variables, or pass big arguments in "
                             "a file");
  }
  return failed;
}

}  // namespace

Result<Spawned> spawnProcess(const SpawnRequest& request) {
  const RankProcess& spec = *request.process;
  int inPipe[2] = {-1, -1}, outPipe[2], errPipe[2], execPipe[2], goPipe[2];
  if (request.stdinPipe) HVD_RETURN_IF_ERROR(openPipe(inPipe, request));
  HVD_RETURN_IF_ERROR(openPipe(outPipe, request));
  HVD_RETURN_IF_ERROR(openPipe(errPipe, request));
  HVD_RETURN_IF_ERROR(openPipe(execPipe, request));
  HVD_RETURN_IF_ERROR(openPipe(goPipe, request));
  const pid_t parent = ::getpid();
  auto argv = cStrings(spec.argv);
  auto envp = cStrings(spec.env);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpus) CPU_SET(cpu, &cpus);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    Status s = systemError("fork for rank " + std::to_string(spec.rank));
    if (error != EAGAIN) return s;
    return forkRefused(std::move(s), request.started, request.processCount);
  }
  if (pid == 0) {
    ::close(goPipe[1]);  // else the read in becomeRank would never see hvdrun's end close
    becomeRank(spec, argv.data(), envp.data(), spec.cpus.empty() ? nullptr : &cpus, inPipe[0], outPipe[1], errPipe[1],
               execPipe[1], goPipe[0], parent, request.fileLimit ? &*request.fileLimit : nullptr);
  }
  Spawned spawned;
  spawned.pid = pid;
  if (inPipe[0] >= 0) {
    // Only hvdrun holds the write end (O_CLOEXEC): when hvdrun dies, the process reads EOF.
    ::close(inPipe[0]);
    spawned.stdinFd = inPipe[1];
  }
  ::close(goPipe[0]);
  // The guardian learns the rank's session before the rank may run anything.
  if (request.beforeRun) request.beforeRun(pid);
  char go = 1;
  while (::write(goPipe[1], &go, 1) < 0 && errno == EINTR) {
  }
  ::close(goPipe[1]);
  // No setpgid here (it would make the child a group leader, and setsid would then fail); the
  // exec pipe read below returns after setsid, so the group exists before any signal.
  ::close(outPipe[1]);
  ::close(errPipe[1]);
  ::close(execPipe[1]);
  spawned.stdoutFd = outPipe[0];
  spawned.stderrFd = errPipe[0];
  // The exec pipe closes on a successful exec; an errno arrives when exec failed.
  if (int error = execErrorFrom(execPipe[0]); error != 0) spawned.execFailed = execFailure(spec, error);
  return spawned;
}

Result<std::optional<rlimit>> reserveDescriptors(size_t rankCount, bool outputFiles) {
  std::optional<rlimit> raisedFrom;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return raisedFrom;
  if (limit.rlim_cur < descriptorsNeeded(rankCount) && limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = std::min<rlim_t>(limit.rlim_max, descriptorsNeeded(rankCount));
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) raisedFrom = limit;
  }
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  if (now.rlim_cur >= descriptorsHeld(rankCount, outputFiles)) return raisedFrom;
  return outOfDescriptors(systemError("starting " + std::to_string(rankCount) + " ranks", EMFILE), rankCount, EMFILE,
                          now.rlim_cur);
}

Status checkDescriptorRoom(size_t rankCount, bool outputFiles) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) return Status::ok();
  if (limit.rlim_max >= descriptorsHeld(rankCount, outputFiles)) return Status::ok();
  // The hint names the hard limit: what superviseRanks would have raised the soft one to.
  return outOfDescriptors(systemError("starting " + std::to_string(rankCount) + " ranks", EMFILE), rankCount, EMFILE,
                          limit.rlim_max);
}

}  // namespace hvd::cli
