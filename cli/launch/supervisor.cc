// cli/launch/supervisor.cc: fork/exec, a poll loop over output pipes and a signalfd, and
// the fail-fast teardown. Single-threaded: one loop owns every rank's state.
#include "cli/launch/supervisor.h"
#include "cli/os/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "cli/launch/agent_protocol.h"
#include "cli/launch/line_splitter.h"
#include "cli/launch/open_mpi_tags.h"
#include "cli/launch/stdin_forwarding.h"
#include "cli/os/console_writer.h"
#include "cli/os/inherited_signals.h"
#include "cli/os/machine.h"
#include "cli/os/process_table.h"

namespace hvd::cli {
namespace {

using Clock = std::chrono::steady_clock;

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

constexpr size_t kRememberedStderrLines = 10;
constexpr size_t kRememberedLineLength = 500;
// Once every rank has exited, how long we still read output that their leftover children
// may be writing before we stop them too.
constexpr std::chrono::milliseconds kDrainAfterExit{1000};
// A rank's stdout pipe holds up to 1 MiB (the kernel's default is 64 KiB), and one read
// takes it whole: ranks that write fast wait less, and hvdrun wakes less often (10-15%
// more throughput in bench/output_bench). All ranks' pipes together stay within 16 MiB, a
// quarter of the user's pipe budget (fs.pipe-user-pages-soft, 64 MiB by default), past
// which the kernel would shrink every new pipe of that user, the ranks' own included.
constexpr int kMaxPipeSize = 1 << 20;
constexpr size_t kPipeBudget = size_t{16} << 20;
constexpr size_t kReadSize = 1 << 20;
// A progress bar's redraw that has begun goes out once its stream is quiet this long
// (LineSplitter::holdsRedraw): the console then shows the bar's state, not the one before.
constexpr std::chrono::milliseconds kRedrawQuiet{150};

const int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};

// Passed on to the ranks and nothing more (preemption notices): the job goes on, and a rank
// they end has failed, as it would have run alone. Every other signal passed on also stops
// the job (SIGQUIT too, after the ranks' own handlers, a stack dump, have had it).
bool isNotice(int sig) { return sig == SIGUSR1 || sig == SIGUSR2; }

// What a stopped process acts on only once continued.
bool isStop(int sig) { return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT; }

struct Stream {
  int fd = -1;
  LineSplitter splitter;
  std::chrono::steady_clock::time_point lastData{};  // when bytes last came
  OpenMpiTagReader tags;  // mpirun's output only
};

struct Rank {
  const RankProcess* spec = nullptr;
  pid_t pid = -1;
  bool running = false;
  bool stoppedByUs = false;
  int signalSent = 0;  // the last signal hvdrun sent this rank's group
  // It was already dying when hvdrun told it to stop: its signal is not hvdrun's.
  bool endingBeforeStop = false;
  // The rank whose going failed the first failing rank (SupervisorOptions::peerGoneOf):
  // not told to stop until kOwnEndWindow has passed, so its end is its own.
  bool endingByItself = false;
  Stream out, err;
  std::deque<std::string> lastStderr;
  // A host agent's stdin (RankProcess::agentInput): what is still to be written to it.
  int inFd = -1;
  std::string pendingInput;
  // kAgents: the agent's hello, and how it ended (reaped by agentEnded).
  bool greeted = false;
  std::string version;
  bool ended = false;
  int endStatus = 0;
  // A rank that exited 0 by itself (no signal from hvdrun).
  bool endedCleanly = false;
  // Stopped as one an elastic job no longer needs (AfterRankEnd::stop): its end is nothing.
  bool unneeded = false;
  // A host agent some of whose ranks are no longer needed: those it was told to stop.
  std::set<int> stopsOrdered;
};

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The child side of fork: never returns. Reports an exec failure's errno on errorFd.
// argv and envp are made before fork: the child of a process with threads calls nothing
// that allocates.
// fileLimit: the descriptor limit hvdrun was started with, when it raised its own.
[[noreturn]] void becomeRank(const RankProcess& spec, char* const* argv, char* const* envp, const cpu_set_t* cpus, int inFd,
                             int outFd, int errFd, int errorFd, int goFd, pid_t parent, const rlimit* fileLimit) {
  // A session of its own (so also a process group hvdrun and the guardian signal whole):
  // the kernel's autogroup scheduler then shares the CPU per rank, as under torchrun, not
  // per hvdrun session (ranks sharing one were scheduled 1.35-1.8x slower under load).
  ::setsid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(127);  // hvdrun died before the line above took effect
  // Nothing runs before hvdrun has told the guardian about this session: otherwise a
  // hvdrun killed in between leaves the program's children (behind a shell) unknown to it.
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
  // Planned from CPUs hvdrun may use, so this fails only if they went offline meanwhile:
  // then the rank runs unpinned, as with --bind-to none.
  if (cpus != nullptr) (void)::sched_setaffinity(0, sizeof *cpus, cpus);
  ::dup2(outFd, STDOUT_FILENO);
  ::dup2(errFd, STDERR_FILENO);
  // Dispositions set to "ignore" and the blocked mask survive exec: give the program the
  // defaults it expects.
  for (int sig : kHandledSignals) ::signal(sig, SIG_DFL);
  restoreIgnoredSignals();
  // The program gets the limit it was started under: a soft limit past 1024 breaks select().
  if (fileLimit != nullptr) (void)::setrlimit(RLIMIT_NOFILE, fileLimit);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(spec.executable.c_str(), argv, envp);
  int error = errno;
  (void)!::write(errorFd, &error, sizeof error);
  _exit(127);
}

class Job {
 public:
  Job(const std::vector<RankProcess>& specs, const SupervisorOptions& options) : options_(options) {
    ranks_.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) ranks_[i].spec = &specs[i];
    if (const auto& forwarding = options_.stdinForwarding) {
      const bool agents = options_.labels == SupervisorOptions::Labels::kAgents;
      for (Rank& r : ranks_) {
        const auto& served = r.spec->agentRanks;
        const bool runsIt = agents ? std::count(served.begin(), served.end(), forwarding->rank) > 0
                                   : r.spec->rank == forwarding->rank;
        if (runsIt) stdinTo_ = &r;
      }
      if (agents) stdinSender_.emplace(forwarding->fd);
    }
    // Progress bars' '\r' redraws pass through where hvdrun reads the ranks' own streams
    // (and its host agents', which pass them on); srun and mpirun relabel them their way.
    for (Rank& r : ranks_) prepareStreams(r);
    // mpirun's output holds tagged pieces of every rank's lines: it is read as it comes, not
    // in lines, and cut per rank once the tags are read (OpenMpiTagReader). Read in lines,
    // a progress bar redrawn for an epoch made one of megabytes, and past a cap its rest
    // lost its tags and printed as mpirun's.
  }

  void prepareStreams(Rank& r) const {
    if (options_.labels == SupervisorOptions::Labels::kNone || options_.labels == SupervisorOptions::Labels::kAgents) {
      // An agent's lines carry its rank's prefix before a line it already cut: room for both.
      size_t room = options_.maxLineBytes + (options_.labels == SupervisorOptions::Labels::kAgents ? 64 : 0);
      r.out.splitter = r.err.splitter = LineSplitter(room, /*splitAtCarriageReturn=*/true);
    }
    if (options_.labels == SupervisorOptions::Labels::kOpenMpi) {
      r.out.tags = r.err.tags = OpenMpiTagReader(options_.maxLineBytes);
    }
  }

  // SupervisorOptions::changeRanks: the ranks it gives now, started beside the others, and
  // those it takes away.
  void changeRanks() {
    changeDeadline_ = Clock::now() + options_.changeRanksEvery;
    if (outcome_.firstFailure || outcome_.interruptSignal != 0 || !outcome_.neverReady.empty() || killDeadline_) return;
    auto changes = options_.changeRanks();
    stopUnneeded(changes.stop, nullptr);
    for (RankProcess& spec : changes.start) {
      addedSpecs_.push_back(std::move(spec));
      Rank& r = ranks_.emplace_back();
      r.spec = &addedSpecs_.back();
      prepareStreams(r);
      if (!options_.outputDir.empty()) {
        fileFor(r.spec->rank, false);
        fileFor(r.spec->rank, true);
      }
      if (Status started = start(r); !started.isOk()) {
        std::fprintf(stderr, "hvdrun: %s\n", started.message().c_str());
        RankFailure f;
        f.rank = r.spec->rank;
        f.host = r.spec->host;
        f.exitCode = 127;
        f.when = nowIso8601();
        (void)elasticGoesOnWithout({r.spec->rank}, &f);
      }
    }
  }

  ~Job() {
    for (Rank& r : ranks_) {
      closeStream(r.out);
      closeStream(r.err);
      closeInput(r);
    }
    if (signalFd_ >= 0) ::close(signalFd_);
    for (auto& [key, fd] : files_) {
      if (fd >= 0) ::close(fd);
    }
    ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
  }

  Result<JobOutcome> run() {
    HVD_RETURN_IF_ERROR(reserveDescriptors());
    HVD_RETURN_IF_ERROR(installSignals());
    // Every rank has both files, also one that never writes (an empty file says "silent";
    // a missing one would look like a lost rank).
    if (!options_.outputDir.empty()) {
      for (int rank = 0; rank < options_.rankCount; ++rank) {
        fileFor(rank, false);
        fileFor(rank, true);
      }
    }
    for (Rank& r : ranks_) {
      if (Status s = start(r); !s.isOk()) {
        signalAll(SIGKILL);
        reapAll();
        return s;
      }
    }
    loop();
    waitForConsole();
    return outcome_;
  }

 private:
  Status installSignals() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : kHandledSignals) sigaddset(&mask, sig);
    if (::sigprocmask(SIG_BLOCK, &mask, &oldMask_) != 0) return systemError("sigprocmask");
    signalFd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signalFd_ < 0) return systemError("signalfd");
    ::signal(SIGPIPE, SIG_IGN);
    return Status::ok();
  }

  // Before any rank starts: a soft descriptor limit under what the job needs is raised
  // (up to the hard limit; the ranks get the one hvdrun was started with), and a job whose
  // ranks' two pipes each cannot fit even so fails at once. A typo'd -np 100000 used to
  // fork ranks for 44 s before the same error.
  Status reserveDescriptors() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return Status::ok();
    if (limit.rlim_cur < descriptorsNeeded(ranks_.size()) && limit.rlim_cur < limit.rlim_max) {
      rlimit raised = limit;
      raised.rlim_cur = std::min<rlim_t>(limit.rlim_max, descriptorsNeeded(ranks_.size()));
      if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) raisedFrom_ = limit;
    }
    rlimit now{};
    ::getrlimit(RLIMIT_NOFILE, &now);
    if (now.rlim_cur >= descriptorsHeld(ranks_.size(), !options_.outputDir.empty())) return Status::ok();
    return outOfDescriptors(systemError("starting " + std::to_string(ranks_.size()) + " ranks", EMFILE), ranks_.size(),
                            EMFILE, now.rlim_cur);
  }

  // A pipe for rank r; out of descriptors, the error says how many a job this size needs.
  Status openPipe(int fds[2], const Rank& r) {
    if (::pipe2(fds, O_CLOEXEC) == 0) return Status::ok();
    int error = errno;
    Status s = systemError("pipe for rank " + std::to_string(r.spec->rank), error);
    if (error != EMFILE && error != ENFILE) return s;
    return outOfDescriptors(s, ranks_.size(), error, softDescriptorLimit());
  }

  Status start(Rank& r) {
    int inPipe[2] = {-1, -1}, outPipe[2], errPipe[2], execPipe[2], goPipe[2];
    // A host agent's rank that reads the stdin hvdrun forwards: a pipe the feeder fills.
    const bool feedsStdin = &r == stdinTo_ && options_.labels == SupervisorOptions::Labels::kNone;
    if (r.spec->agentInput || feedsStdin) HVD_RETURN_IF_ERROR(openPipe(inPipe, r));
    HVD_RETURN_IF_ERROR(openPipe(outPipe, r));
    HVD_RETURN_IF_ERROR(openPipe(errPipe, r));
    HVD_RETURN_IF_ERROR(openPipe(execPipe, r));
    HVD_RETURN_IF_ERROR(openPipe(goPipe, r));
    pid_t parent = ::getpid();
    auto argv = cStrings(r.spec->argv);
    auto envp = cStrings(r.spec->env);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : r.spec->cpus) CPU_SET(cpu, &cpus);
    pid_t pid = ::fork();
    if (pid < 0) {
      const int error = errno;
      Status s = systemError("fork for rank " + std::to_string(r.spec->rank));
      if (error != EAGAIN) return s;
      const auto started = std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& x) { return x.pid > 0; });
      return forkRefused(std::move(s), static_cast<size_t>(started), ranks_.size());
    }
    if (pid == 0) {
      ::close(goPipe[1]);  // else the read below would never see hvdrun's end close
      becomeRank(*r.spec, argv.data(), envp.data(), r.spec->cpus.empty() ? nullptr : &cpus, inPipe[0], outPipe[1], errPipe[1],
                 execPipe[1], goPipe[0], parent, raisedFrom_ ? &*raisedFrom_ : nullptr);
    }
    if (inPipe[0] >= 0 && feedsStdin) {
      ::close(inPipe[0]);
      stdinFeeder_ = std::make_unique<StdinFeeder>(options_.stdinForwarding->fd, inPipe[1]);
    } else if (inPipe[0] >= 0) {
      // Only hvdrun holds the write end (O_CLOEXEC): when hvdrun dies, the agent reads EOF.
      ::close(inPipe[0]);
      ::fcntl(inPipe[1], F_SETFL, O_NONBLOCK);  // a host that stops reading must not stop hvdrun
      r.inFd = inPipe[1];
      r.pendingInput = *r.spec->agentInput;
    }
    ::close(goPipe[0]);
    // The guardian learns the rank's session before the rank may run anything.
    if (options_.onRankStarted) options_.onRankStarted(pid);
    char go = 1;
    while (::write(goPipe[1], &go, 1) < 0 && errno == EINTR) {
    }
    ::close(goPipe[1]);
    // No setpgid here (it would make the child a group leader, and setsid would then fail);
    // the exec pipe read below returns after setsid, so the group exists before any signal.
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    ::close(execPipe[1]);
    r.pid = pid;
    r.running = true;
    r.out.fd = outPipe[0];
    if (size_t share = kPipeBudget / ranks_.size(); share > 65536) {
      ::fcntl(r.out.fd, F_SETPIPE_SZ, static_cast<int>(std::min<size_t>(share, kMaxPipeSize)));
    }
    r.err.fd = errPipe[0];
    if (!holdingInput()) writeInput(r);
    // The exec pipe closes on a successful exec; an errno arrives when exec failed.
    if (int error = execErrorFrom(execPipe[0]); error != 0) {
      Status failed =
          systemError("cannot start rank " + std::to_string(r.spec->rank) + " (" + r.spec->executable + ")", error);
      // A script without a "#!" line: a shell would run it with itself, exec does not.
      if (error == ENOEXEC) {
        failed = failed.withHint("it is neither a program nor a script with a #! line: make its first line "
                                 "#!/bin/bash (or its interpreter's), or name the interpreter: hvdrun -np N bash " +
                                 r.spec->executable);
      }
      // hvdrun's own arguments and environment fitted; the rank's, with the variables hvdrun
      // adds (or one over the kernel's 128 KiB for a single string), did not.
      if (error == E2BIG) {
        size_t bytes = 0, largest = 0;
        for (const auto& s : r.spec->argv) bytes += s.size() + 1 + sizeof(char*);
        for (const auto& s : r.spec->env) {
          bytes += s.size() + 1 + sizeof(char*);
          largest = std::max(largest, s.size());
        }
        failed = failed.withHint("the rank's arguments and environment take " + std::to_string(bytes >> 10) +
                                 " KiB (the largest variable " + std::to_string(largest >> 10) +
                                 " KiB), with the variables hvdrun adds; the kernel allows " +
                                 std::to_string(::sysconf(_SC_ARG_MAX) >> 10) +
                                 " KiB in all and 128 KiB per string: unset large variables, or pass big arguments "
                                 "in a file");
      }
      return failed;
    }
    return Status::ok();
  }

  // At the start deadline: when some but not all ranks reached the rendezvous, the job
  // fails (exit 124) naming the ones that did not.
  void checkStart(std::optional<Clock::time_point>& startDeadline, std::optional<Clock::time_point>& killDeadline) {
    startDeadline.reset();
    if (!options_.readyRanks || outcome_.firstFailure || outcome_.interruptSignal != 0) return;
    std::set<int> ready = options_.readyRanks();
    if (ready.empty()) return;
    std::vector<int> missing;  // an elastic job's ranks that ended before they got there are not awaited
    for (int r = 0; r < options_.rankCount; ++r) {
      if (!ready.count(r) && !departed_.count(r)) missing.push_back(r);
    }
    if (missing.empty()) return;
    outcome_.neverReady = std::move(missing);
    outcome_.exitCode = 124;
    stopOthers();
    killDeadline = Clock::now() + options_.killGrace;
  }

  void loop() {
    std::optional<Clock::time_point> drainDeadline;
    std::optional<Clock::time_point> startDeadline;
    if (options_.startTimeout.count() > 0 && options_.readyRanks) startDeadline = Clock::now() + options_.startTimeout;
    if (holdingInput()) helloDeadline_ = Clock::now() + options_.agentHelloTimeout;
    if (options_.changeRanks) changeDeadline_ = Clock::now() + options_.changeRanksEvery;
    if (options_.frozenFails) frozenDeadline_ = Clock::now() + std::chrono::seconds(1);
    while (true) {
      bool anyRunning = false, anyOpen = false;
      for (const Rank& r : ranks_) {
        anyRunning |= r.running;
        anyOpen |= r.out.fd >= 0 || r.err.fd >= 0;
      }
      if (!anyRunning && !anyOpen) break;
      if (!anyRunning && !drainDeadline) drainDeadline = Clock::now() + kDrainAfterExit;
      if (drainDeadline && Clock::now() >= *drainDeadline) {
        // Only leftover children of finished ranks hold the pipes now: stop them.
        signalAll(SIGKILL, /*includeExited=*/true);
        for (Rank& r : ranks_) {
          drain(r.out, r, false);
          drain(r.err, r, true);
        }
        break;
      }
      if (ownEndDeadline_ && Clock::now() >= *ownEndDeadline_) stopSlowEnders();  // before a SIGKILL due now
      if (killDeadline_ && Clock::now() >= *killDeadline_) {
        signalAll(SIGKILL);
        killDeadline_.reset();
      }
      if (unneededKillDeadline_ && Clock::now() >= *unneededKillDeadline_) {
        unneededKillDeadline_.reset();
        for (Rank& r : ranks_) {
          if (r.unneeded && r.running) sendSignal(r, SIGKILL);
        }
      }
      if (startDeadline && Clock::now() >= *startDeadline) checkStart(startDeadline, killDeadline_);
      if (helloDeadline_ && Clock::now() >= *helloDeadline_) checkHellos();
      if (changeDeadline_ && Clock::now() >= *changeDeadline_) changeRanks();
      if (frozenDeadline_ && Clock::now() >= *frozenDeadline_) {
        frozenDeadline_ = Clock::now() + std::chrono::seconds(1);
        if (!outcome_.firstFailure && outcome_.interruptSignal == 0 && !killDeadline_) failFrozen(/*onlyLong=*/true);
      }

      std::vector<pollfd> pfds{{signalFd_, POLLIN, 0}};
      std::vector<std::pair<Rank*, bool>> owners{{nullptr, false}};
      // A console that does not keep up: read no more output until it has taken some (the
      // ranks wait on their pipes, as on a slow terminal); signals and deadlines go on.
      const bool consoleFull = console_.full();
      if (consoleFull) {
        console_.clearWake();
        pfds.push_back({console_.wakeFd(), POLLIN, 0}), owners.push_back({nullptr, false});
      }
      // A console write that failed: nobody may write again for a long time to find out.
      const size_t consoleFailure = pfds.size();
      pfds.push_back({console_.failureFd(), POLLIN, 0}), owners.push_back({nullptr, false});
      const size_t firstOutput = pfds.size();
      for (Rank& r : ranks_) {
        if (consoleFull) break;
        if (r.out.fd >= 0) pfds.push_back({r.out.fd, POLLIN, 0}), owners.push_back({&r, false});
        if (r.err.fd >= 0) pfds.push_back({r.err.fd, POLLIN, 0}), owners.push_back({&r, true});
      }
      const size_t outputFds = pfds.size();
      std::vector<Rank*> writers;
      for (Rank& r : ranks_) {
        if (r.inFd >= 0 && !r.pendingInput.empty() && !holdingInput()) {
          pfds.push_back({r.inFd, POLLOUT, 0}), writers.push_back(&r);
        }
      }
      const size_t writerFds = pfds.size();
      auto [stdinSource, stdinPipe] = pollStdinForwarding(pfds);
      if (preemptDeadline_ && Clock::now() >= *preemptDeadline_) {
        preemptDeadline_.reset();
        for (const Rank& r : ranks_) outcome_.ranksStoppedAfterPreemption += r.running ? 1 : 0;
        stopOthers();
        if (!killDeadline_) killDeadline_ = Clock::now() + options_.killGrace;
      }
      flushQuietPieces();
      int timeout = -1;
      for (auto deadline : {killDeadline_, drainDeadline, startDeadline, preemptDeadline_, helloDeadline_, ownEndDeadline_,
                            pieceDeadline(), stdinSender_ ? stdinSender_->retryAt() : std::nullopt, changeDeadline_,
                            frozenDeadline_, unneededKillDeadline_}) {
        if (!deadline) continue;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count() + 1;
        timeout = timeout < 0 ? static_cast<int>(std::max<long long>(ms, 0))
                              : std::min(timeout, static_cast<int>(std::max<long long>(ms, 0)));
      }
      int rc = ::poll(pfds.data(), pfds.size(), timeout);
      if (rc < 0 && errno != EINTR) break;
      for (size_t i = firstOutput; i < outputFds; ++i) {
        if ((pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        auto [rank, isErr] = owners[i];
        readSome(isErr ? rank->err : rank->out, *rank, isErr);
      }
      for (size_t i = outputFds; i < writerFds; ++i) {
        if (pfds[i].revents != 0) writeInput(*writers[i - outputFds]);
      }
      if (stdinSource && pfds[*stdinSource].revents != 0) forwardStdin();
      if (stdinPipe && pfds[*stdinPipe].revents != 0) queueRecords(stdinFeeder_->writePipe());
      if (pfds[0].revents & POLLIN) handleSignals(killDeadline_);
      if (pfds[consoleFailure].revents & POLLIN) takeConsoleFailures();
      if (pausedFor_ > Clock::duration::zero()) {
        for (auto* deadline : {&drainDeadline, &startDeadline, &killDeadline_, &helloDeadline_, &ownEndDeadline_,
                               &unneededKillDeadline_}) {
          if (*deadline) **deadline += pausedFor_;
        }
        pausedFor_ = Clock::duration::zero();
      }
    }
    reapAll();
  }

  // --stdin forwarded (SupervisorOptions::stdinForwarding): what to poll, as indices into
  // pfds: the input's source, and (an agent) its rank's stdin pipe while bytes wait for it.
  std::pair<std::optional<size_t>, std::optional<size_t>> pollStdinForwarding(std::vector<pollfd>& pfds) {
    std::optional<size_t> source, pipe;
    if (stdinSender_ && stdinTo_ && !holdingInput() && !helloFailed_) {
      if (!stdinTo_->running || stdinTo_->inFd < 0) stdinSender_->stop();  // its agent is gone
      // Frames wait in the agent's input behind any signal lines; read no more meanwhile.
      if (stdinTo_->pendingInput.size() < kAgentInputWindow && stdinSender_->wantsRead(Clock::now())) {
        source = pfds.size();
        pfds.push_back({options_.stdinForwarding->fd, POLLIN, 0});
      }
    }
    if (stdinFeeder_) {
      if (stdinTo_ && !stdinTo_->running) queueRecords(stdinFeeder_->rankEnded());
      // Drained whatever the rank does: the window bounds it, and the connection's reader
      // must never wait on it (signals come that way too).
      if (stdinFeeder_->source() >= 0) source = pfds.size(), pfds.push_back({stdinFeeder_->source(), POLLIN, 0});
      if (stdinFeeder_->wantsWrite()) pipe = pfds.size(), pfds.push_back({stdinFeeder_->pipe(), POLLOUT, 0});
    }
    return {source, pipe};
  }

  void forwardStdin() {
    if (stdinFeeder_) {
      queueRecords(stdinFeeder_->readSource());
      return;
    }
    std::string frame = stdinSender_->read();
    if (frame.empty()) return;
    stdinTo_->pendingInput += frame;
    writeInput(*stdinTo_);
  }

  // A host agent's records for hvdrun, on stderr after the lines read so far.
  void queueRecords(const std::string& records) {
    if (records.empty()) return;
    endOpenLine();
    batchFor(STDERR_FILENO) += records;
    flushBatch();
  }

  void handleSignals(std::optional<Clock::time_point>& killDeadline) {
    signalfd_siginfo info;
    while (::read(signalFd_, &info, sizeof info) == sizeof info) {
      int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) {
        reapExited(killDeadline);
        continue;
      }
      if (sig == SIGTSTP) {
        holdJob();
        continue;
      }
      if (sig == SIGCONT) {
        if (options_.onStop == SupervisorOptions::OnStop::kRanks) holdRanks(false);
        continue;  // hvdrun's own (kSelf): holdJob has continued the ranks already
      }
      if (sig == SIGINT && outcome_.interruptSignal == SIGINT) {
        signalAll(SIGKILL);  // the second Ctrl-C: the user means it
        continue;
      }
      if (sig == options_.preemptSignal && !outcome_.preempted) {
        outcome_.preempted = true;
        if (options_.onPreempt) options_.onPreempt();  // the flag is up before ranks hear the signal
        if (options_.preemptGrace) preemptDeadline_ = Clock::now() + *options_.preemptGrace;
      }
      signalAll(sig);
      if (isNotice(sig)) {
        outcome_.noticePassedOn = sig;
        continue;
      }
      if (outcome_.interruptSignal == 0) outcome_.interruptSignal = sig;
      for (Rank& r : ranks_) r.stoppedByUs |= r.running;
      // A scheduler follows SIGTERM with SIGKILL after its own grace: stop ranks before. And
      // one Ctrl-C must end the job too: a Python rank blocked in a collective raises its
      // KeyboardInterrupt only once the call returns, which its waiting peers never let it.
      if (!killDeadline) killDeadline = Clock::now() + options_.killGrace;
    }
  }

  // Failed writes to hvdrun's console. EPIPE: its reader went away (`hvdrun ... | head`);
  // as a program writing into that pipe would be killed by SIGPIPE, and as mpirun aborts,
  // the job is stopped (SIGTERM, then the kill grace), never left running on unseen.
  // Anything else (a full disk): the job goes on, its output there is incomplete, and
  // hvdrun says so now and with its exit code.
  void takeConsoleFailures() {
    for (auto [fd, error] : console_.takeFailures()) {
      const std::string name = fd == STDOUT_FILENO ? "stdout" : fd == STDERR_FILENO ? "stderr" : "the console";
      if (error == EPIPE) {
        if (outcome_.consoleClosed.empty()) outcome_.consoleClosed = name;
        stopForClosedConsole();
        continue;
      }
      std::string what = "writing " + name + ": " + std::strerror(error);
      if (outcome_.consoleProblem.empty()) outcome_.consoleProblem = what;
      // Once the ranks are done, the job's last words say it.
      bool anyRunning = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
      if (fd != STDERR_FILENO && anyRunning) {
        endOpenLine();
        batchFor(STDERR_FILENO) += "hvdrun: warning: " + what + "; the ranks' output there is incomplete from here on\n";
        flushBatch();
      }
    }
  }

  void stopForClosedConsole() {
    bool anyRunning = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
    if (!anyRunning || outcome_.interruptSignal != 0 || outcome_.firstFailure || !outcome_.neverReady.empty()) return;
    outcome_.interruptSignal = SIGPIPE;  // the exit code a program killed by it would give: 141
    signalAll(SIGTERM);  // not SIGPIPE: Python ignores that one
    for (Rank& r : ranks_) r.stoppedByUs |= r.running;
    if (!killDeadline_) killDeadline_ = Clock::now() + options_.killGrace;
  }

  // Ctrl-Z. Ranks run in sessions of their own, out of reach of the terminal's SIGTSTP, and
  // would go on while the shell says the job is stopped: writing into pipes nobody drains,
  // holding GPUs, and timing out in their collectives at `fg`. So hvdrun holds them first and
  // then stops itself with the same signal (SIGTSTP's own action, which the kernel drops
  // where no shell could continue hvdrun: an orphaned process group; then the ranks go on at
  // once). Time stopped does not count against hvdrun's deadlines, but for the preemption
  // grace, which is the scheduler's clock.
  void holdJob() {
    holdRanks(true);
    if (options_.onStop == SupervisorOptions::OnStop::kRanks) return;
    const auto stoppedAt = Clock::now();
    sigset_t tstp;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    ::pthread_sigmask(SIG_UNBLOCK, &tstp, nullptr);
    ::raise(SIGTSTP);
    ::pthread_sigmask(SIG_BLOCK, &tstp, nullptr);
    pausedFor_ += Clock::now() - stoppedAt;
    holdRanks(false);
  }

  // Stops (hold) or continues every running rank. Only a hold is undone: a SIGCONT after a
  // `kill -STOP` of hvdrun itself (which hvdrun cannot see) continues no rank. Forked ranks
  // get SIGSTOP: SIGTSTP's default action is dropped for their orphaned process groups.
  void holdRanks(bool hold) {
    if (!hold && !ranksHeld_) return;
    ranksHeld_ = hold;
    const bool forked = options_.labels == SupervisorOptions::Labels::kNone;
    const int sig = hold ? (forked ? SIGSTOP : SIGTSTP) : SIGCONT;
    for (Rank& r : ranks_) {
      if (!r.running || r.pid <= 0) continue;
      if (r.inFd < 0) {
        ::kill(-r.pid, sig);
      } else if (!holdingInput() && !helloFailed_) {  // a host agent with its job: it holds its ranks
        r.pendingInput += agentSignalLine(sig);
        writeInput(r);
      }
    }
  }

  // Reaps every child that has exited and picks the job's root cause. A rank that died of a
  // signal hvdrun never sent it (a crash, SIGKILL by the OOM killer) is the cause over a
  // rank that merely exited with an error; such an error is typically a survivor reacting
  // to the crash, and it may even be reaped first (a dying process's sockets close before
  // its parent is told), so a crash reaped within kCauseWindow of the first failure still
  // takes over.
  void reapExited(std::optional<Clock::time_point>& killDeadline) {
    while (true) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (Rank& r : ranks_) {
        if (r.pid != pid || !r.running) continue;
        r.running = false;
        // TensorFlow's rule for ParameterServerStrategy: the job is done when its chief
        // (the coordinator) is; ps servers and workers would wait in server.join() forever.
        if (options_.coordinatorRank && r.spec->rank == *options_.coordinatorRank && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0 && !outcome_.firstFailure && outcome_.interruptSignal == 0) {
          if (options_.onCoordinatorDone) options_.onCoordinatorDone();
          for (const Rank& other : ranks_) outcome_.ranksStoppedAfterCoordinator += other.running ? 1 : 0;
          if (outcome_.ranksStoppedAfterCoordinator > 0) {
            stopOthers();
            killDeadline = Clock::now() + options_.killGrace;
          }
          continue;
        }
        if (options_.labels == SupervisorOptions::Labels::kAgents) {
          agentEnded(r, pid, status);
          continue;
        }
        if (r.unneeded) {
          unneededEnded();
          continue;
        }
        r.endedCleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0 && r.signalSent == 0;
        if (r.endedCleanly && options_.onCleanEnd) options_.onCleanEnd(r.spec->rank);
        if (r.endingByItself) {
          r.endingByItself = false;
          bool failedByItself = WIFSIGNALED(status) || WEXITSTATUS(status) != 0;
          if (failedByItself) takeOverCause(failureOf(r, pid, status));
          if (r.endedCleanly && outcome_.firstFailure && awaitedRank_ == r.spec->rank) {
            outcome_.firstFailure->peerEndedCleanly = r.spec->rank;
          }
          continue;
        }
        bool crashed = WIFSIGNALED(status) && (WTERMSIG(status) != r.signalSent || r.endingBeforeStop);
        bool failed = crashed || (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !r.stoppedByUs);
        if (options_.rankEnded && r.signalSent == 0) {
          RankFailure f = failureOf(r, pid, status);
          f.lastStderrLines = r.lastStderr;
          if (elasticGoesOnWithout({r.spec->rank}, failed ? &f : nullptr)) continue;
        }
        // Told to stop, but it ended with an error of its own (a peer's death seen first,
        // 1 from Python's traceback): not one hvdrun stopped. 128+SIGTERM is how a program
        // that handles SIGTERM says it obeyed.
        if (r.stoppedByUs && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
            WEXITSTATUS(status) != 128 + r.signalSent && outcome_.interruptSignal == 0) {
          r.stoppedByUs = false;
          outcome_.alsoFailed.push_back(r.spec->rank);
        }
        if (!failed) continue;
        if (noteFailure(failureOf(r, pid, status), crashed, r.endingBeforeStop)) {
          r.stoppedByUs = false;  // the cause, not a rank hvdrun stopped
        }
      }
    }
  }

  RankFailure failureOf(const Rank& r, pid_t pid, int status) const {
    RankFailure f;
    f.rank = r.spec->rank;
    f.host = r.spec->host;
    f.pid = pid;
    f.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    f.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    f.when = nowIso8601();
    f.launcherProcess = options_.labels == SupervisorOptions::Labels::kAgents;
    return f;
  }

  // A failure becomes the job's root cause when it is the first, or a crash soon after a
  // first failure that was only an error exit (or any time after it, for a rank that was
  // already dying when hvdrun stopped the others: its peers saw its sockets close and
  // exited before the kernel told hvdrun it had died); the first one stops every other
  // rank. True when it became the root cause.
  bool noteFailure(RankFailure f, bool crashed, bool endedBeforeStop = false) {
    if (outcome_.interruptSignal != 0) return false;
    if (outcome_.firstFailure) {
      bool firstWasError = outcome_.firstFailure->signal == 0;
      bool soon = Clock::now() - firstFailureAt_ < kCauseWindow || endedBeforeStop;
      if (!(crashed && firstWasError && soon)) return false;
    }
    bool first = !outcome_.firstFailure;
    outcome_.firstFailure = std::move(f);
    if (options_.onFailure) options_.onFailure(*outcome_.firstFailure);
    if (first) {
      firstFailureAt_ = Clock::now();
      if (!crashed) awaitRankGone(outcome_.firstFailure->rank);
      noteStoppedRanks();  // before stopOthers() wakes them
      stopOthers();
      killDeadline_ = Clock::now() + options_.killGrace;
    }
    return true;
  }

  // The first failure was an error exit that its runtime blamed on another rank's going (a
  // peer hears of a death, or of hvd.shutdown() in a SIGTERM handler, as soon as it
  // happens, and may be reaped long before the dying rank ends). Follows such reports to
  // the rank that went first; if it still runs and hvdrun never signalled it, it is left
  // to end by itself for kOwnEndWindow (stopOthers() passes it by).
  void awaitRankGone(int failed) {
    const bool agents = options_.labels == SupervisorOptions::Labels::kAgents;
    if (!options_.peerGoneOf || (options_.labels != SupervisorOptions::Labels::kNone && !agents)) return;
    const int went = wentFirst(failed);
    if (went == failed) return;
    for (const Rank& r : ranks_) {
      if (!agents && r.spec->rank == went && r.endedCleanly) outcome_.firstFailure->peerEndedCleanly = went;
    }
    if (agents && cleanEnds_.count(went)) outcome_.firstFailure->peerEndedCleanly = went;
    for (Rank& r : ranks_) {
      const auto& own = r.spec->agentRanks;
      bool runsIt = agents ? std::find(own.begin(), own.end(), went) != own.end() : r.spec->rank == went;
      if (!runsIt || !r.running || r.signalSent != 0) continue;
      r.endingByItself = true;
      awaitedRank_ = went;
      ownEndDeadline_ = Clock::now() + std::min<std::chrono::milliseconds>(kOwnEndWindow, options_.killGrace);
    }
  }

  // The rank whose going a failed rank's runtime blamed, followed along such reports to the
  // one that went first (`failed` itself when it blamed none).
  int wentFirst(int failed) const {
    std::set<int> seen{failed};
    int went = failed;
    while (auto next = options_.peerGoneOf(went)) {
      if (!seen.insert(*next).second) break;
      went = *next;
    }
    return went;
  }

  // The rank awaitRankGone found ended with a failure: it is the job's cause, unless it
  // only exited with an error after a crash took the cause over (a rank dying when hvdrun
  // stopped the others), or it has since said whose going failed it. Such a rank was
  // awaited because it had not said so yet; reaped late, a peer of the dying rank can
  // name it first.
  void takeOverCause(RankFailure f) {
    if (outcome_.interruptSignal != 0) return;
    if (outcome_.firstFailure && outcome_.firstFailure->signal != 0 && f.signal == 0) return;
    if (options_.peerGoneOf && options_.peerGoneOf(f.rank)) return;
    outcome_.firstFailure = std::move(f);
    if (options_.onFailure) options_.onFailure(*outcome_.firstFailure);
  }

  // kOwnEndWindow passed: a rank still ending by itself is stopped like the others, and, as
  // there, one already dying (slow to end on a loaded machine) keeps its death its own.
  void stopSlowEnders() {
    ownEndDeadline_.reset();
    for (Rank& r : ranks_) {
      if (!r.endingByItself || !r.running) continue;
      r.endingByItself = false;
      stopRank(r);
    }
  }

  // A host agent ended. Its ranks' failures came as records; one that ends badly without
  // having reported one (ssh could not connect or lost the host, the agent could not start
  // its ranks) is itself the cause. Its last words are read first: a record still in the
  // pipe would otherwise lose to the agent's exit status.
  void agentEnded(Rank& r, pid_t pid, int status) {
    drain(r.out, r, false);
    drain(r.err, r, true);
    closeInput(r);
    r.ended = true;
    r.endStatus = status;
    if (r.unneeded) {
      unneededEnded();
      return;
    }
    if (holdingInput() || helloFailed_) {
      checkHellos();
      return;
    }
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || outcome_.firstFailure || r.stoppedByUs) return;
    // An elastic job goes on without a host whose agent (or ssh connection) was lost, while
    // it can do without every rank the agent ran. They ended together: one decision, one
    // new world (one reset, as Horovod counts a host's loss), one line.
    std::vector<int> lost;
    for (int rank : r.spec->agentRanks) {
      if (!departed_.count(rank)) lost.push_back(rank);
    }
    RankFailure f = failureOf(r, pid, status);
    if (options_.rankEnded != nullptr && lost.empty()) return;
    if (options_.rankEnded != nullptr) {
      RankFailure first = f;
      first.rank = lost.front();
      if (elasticGoesOnWithout(lost, &first)) return;
    }
    noteFailure(std::move(f), false);
  }

  // Elastic training: ranks ended by themselves (a host agent's record, or the agent's own
  // end: all of its ranks at once); rankEnded decides. True when the job goes on without them.
  bool elasticGoesOnWithout(const std::vector<int>& ranks, const RankFailure* failure) {
    if (!options_.rankEnded || outcome_.firstFailure || outcome_.interruptSignal != 0 || !outcome_.neverReady.empty()) {
      return false;
    }
    departed_.insert(ranks.begin(), ranks.end());
    auto after = options_.rankEnded(ranks, failure);
    stopUnneeded(after.stop, std::move(after.onceStopped));
    if (!after.goesOn) return false;
    if (failure != nullptr) {
      for (int rank : ranks) {
        outcome_.leftBehind.push_back(*failure);
        outcome_.leftBehind.back().rank = rank;
      }
      failFrozen();
    }
    return true;
  }

  // Elastic training, after a failure: a rank frozen meanwhile (its peers timed out waiting
  // for it, and one of them failed) would hold up the next world until the elastic timeout.
  // It fails too: killed, and the job goes on without it; so does one frozen for
  // frozenFails, checked every second. Ranks forked here only (state T in /proc), and not
  // while hvdrun holds them itself (Ctrl-Z: holdRanks).
  void failFrozen(bool onlyLong = false) {
    if (options_.labels != SupervisorOptions::Labels::kNone || !options_.rankEnded || ranksHeld_) return;
    std::map<pid_t, Rank*> rankOfSession;
    for (Rank& r : ranks_) {
      if (r.running && r.signalSent == 0 && !departed_.count(r.spec->rank)) rankOfSession[r.pid] = &r;
    }
    if (rankOfSession.empty()) return;
    std::set<pid_t> sessions;
    for (const auto& [session, r] : rankOfSession) sessions.insert(session);
    std::set<Rank*> frozen;
    for (const ProcessInfo& p : processesInSessions(sessions)) {
      if (p.state == 'T' || p.state == 't') frozen.insert(rankOfSession[p.session]);
    }
    const auto now = Clock::now();
    std::map<int, Clock::time_point> since;
    for (Rank* r : frozen) {
      auto seen = frozenSince_.find(r->spec->rank);
      since[r->spec->rank] = seen != frozenSince_.end() ? seen->second : now;
    }
    frozenSince_ = since;
    for (Rank* r : frozen) {
      if (onlyLong && (!options_.frozenFails || now - since[r->spec->rank] < *options_.frozenFails)) continue;
      RankFailure f;
      f.rank = r->spec->rank;
      f.host = r->spec->host;
      f.pid = r->pid;
      f.signal = SIGKILL;
      f.frozenSeconds = onlyLong ? static_cast<int>(std::max<long long>(options_.frozenFails->count() / 1000, 1)) : 0;
      f.when = nowIso8601();
      sendSignal(*r, SIGKILL);
      if (!elasticGoesOnWithout({f.rank}, &f)) noteFailure(f, true);
    }
  }

  // AfterRankEnd::stop: a host agent is stopped when it runs no other rank.
  void stopUnneeded(const std::vector<int>& ranks, std::function<void()> onceStopped) {
    if (ranks.empty()) return;
    unneeded_.insert(ranks.begin(), ranks.end());
    departed_.insert(ranks.begin(), ranks.end());  // not awaited at the rendezvous either
    if (onceStopped) onceUnneededStopped_ = std::move(onceStopped);
    for (Rank& r : ranks_) {
      if (!r.running || r.unneeded) continue;
      const std::vector<int>& its = r.spec->agentRanks.empty() ? std::vector<int>{r.spec->rank} : r.spec->agentRanks;
      if (std::all_of(its.begin(), its.end(), [&](int rank) { return unneeded_.count(rank) > 0; })) {
        r.unneeded = true;
        stopRank(r);
        continue;
      }
      // A host agent keeping some of its ranks: it stops the others itself, as unneeded
      // (agent_protocol.h "stop <rank>"), and its connection stays.
      if (r.inFd < 0 || holdingInput() || helloFailed_) continue;
      for (int rank : its) {
        if (!unneeded_.count(rank) || !r.stopsOrdered.insert(rank).second) continue;
        r.pendingInput += agentStopRankLine(rank);
      }
      writeInput(r);
    }
    if (!unneededKillDeadline_) unneededKillDeadline_ = Clock::now() + options_.killGrace;
    unneededEnded();  // none may have been running
  }

  void unneededEnded() {
    if (!onceUnneededStopped_) return;
    if (std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.unneeded && r.running; })) return;
    auto call = std::move(onceUnneededStopped_);
    onceUnneededStopped_ = nullptr;
    call();
  }

  // A rank frozen by SIGSTOP, Ctrl-Z in its own terminal or a debugger stalls its peers
  // until their timeout, and the first of them to give up looks like the cause: name it.
  // Only ranks this process started (a host agent's are looked at by that agent).
  void noteStoppedRanks() {
    if (options_.labels != SupervisorOptions::Labels::kNone) return;
    std::map<pid_t, int> rankOfSession;
    std::set<pid_t> sessions;
    for (const Rank& r : ranks_) {
      if (!r.running || r.spec->rank == outcome_.firstFailure->rank) continue;
      rankOfSession[r.pid] = r.spec->rank;
      sessions.insert(r.pid);
    }
    if (sessions.empty()) return;
    std::set<int> stopped;
    for (const ProcessInfo& p : processesInSessions(sessions)) {
      if (p.state == 'T' || p.state == 't') stopped.insert(rankOfSession[p.session]);
    }
    outcome_.stoppedWhenFailed.assign(stopped.begin(), stopped.end());
  }

  void stopOthers() {
    for (Rank& r : ranks_) {
      if (r.running && !r.endingByItself) stopRank(r);
    }
  }

  void stopRank(Rank& r) {
    r.stoppedByUs = true;
    // Under load, a rank killed a moment ago (its sockets closed, so a peer failed and was
    // reaped first) may still be ending: the SIGTERM below must not pass for its cause.
    if (options_.labels == SupervisorOptions::Labels::kNone && r.signalSent == 0) r.endingBeforeStop = processEnding(r.pid);
    sendSignal(r, SIGTERM);
  }

  void signalAll(int sig, bool includeExited = false) {
    for (Rank& r : ranks_) {
      if (r.pid > 0 && (r.running || includeExited)) sendSignal(r, sig);
    }
  }

  // kAgents: until every agent has said hello, jobs (and signal lines) wait.
  bool holdingInput() const {
    return options_.labels == SupervisorOptions::Labels::kAgents && !agentsGreeted_ && !helloFailed_;
  }

  // The hello phase ends when every agent has said hello or ended, or at its deadline. All
  // well: every job goes out. Otherwise no job does: every agent is killed (one that said
  // hello reads EOF and starts nothing), and each one that failed is described.
  void checkHellos() {
    if (options_.labels != SupervisorOptions::Labels::kAgents || agentsGreeted_ || helloFailed_) return;
    bool expired = helloDeadline_ && Clock::now() >= *helloDeadline_;
    bool settled = std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.greeted || r.ended; });
    if (!settled && !expired) return;
    helloDeadline_.reset();
    std::vector<AgentStartProblem> problems;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const Rank& r = ranks_[i];
      if (r.greeted && !r.ended && r.version == options_.agentVersion) continue;
      AgentStartProblem p;
      p.process = i;
      p.timedOut = !r.greeted && !r.ended;
      p.ended = r.ended;
      p.exitCode = r.ended && WIFEXITED(r.endStatus) ? WEXITSTATUS(r.endStatus) : 0;
      p.signal = r.ended && WIFSIGNALED(r.endStatus) ? WTERMSIG(r.endStatus) : 0;
      p.version = r.version;
      for (const auto& line : r.lastStderr) p.stderrText += line + "\n";
      problems.push_back(std::move(p));
    }
    if (problems.empty() && outcome_.interruptSignal == 0) {
      agentsGreeted_ = true;
      for (Rank& r : ranks_) writeInput(r);
      return;
    }
    helloFailed_ = true;
    if (outcome_.interruptSignal == 0) outcome_.agentStartProblems = std::move(problems);
    signalAll(SIGKILL);
  }

  // A host agent hears signals on its stdin and passes them to its ranks; SIGKILL ends the
  // agent (or its ssh) itself, and the agent's ranks die with the connection. Before the
  // jobs went out there is nothing to pass a notice to, and a stop ends the connection.
  void sendSignal(Rank& r, int sig) {
    // A rank a notice ends was not stopped by hvdrun: its end is its own, a failure.
    if (!isNotice(sig)) r.signalSent = sig;
    if (holdingInput() || helloFailed_) {
      if (!isNotice(sig)) ::kill(-r.pid, sig);
      return;
    }
    if (r.inFd >= 0 && sig != SIGKILL && r.running) {
      r.pendingInput += agentSignalLine(sig);
      writeInput(r);
      return;
    }
    ::kill(-r.pid, sig);
    // A stopped process acts on a stop request only once continued (as Slurm and
    // systemd do): without this, a frozen rank waited for the SIGKILL at the grace's end.
    if (isStop(sig)) ::kill(-r.pid, SIGCONT);
  }

  // Writes what the pipe takes now; the rest waits for POLLOUT. A closed pipe (the agent
  // is gone) drops it.
  void writeInput(Rank& r) {
    while (r.inFd >= 0 && !r.pendingInput.empty()) {
      ssize_t n = ::write(r.inFd, r.pendingInput.data(), r.pendingInput.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0) {
        closeInput(r);
        return;
      }
      r.pendingInput.erase(0, static_cast<size_t>(n));
    }
  }

  static void closeInput(Rank& r) {
    if (r.inFd >= 0) ::close(r.inFd);
    r.inFd = -1;
    r.pendingInput.clear();
  }

  void reapAll() {
    for (Rank& r : ranks_) {
      if (!r.running) continue;
      int status = 0;
      while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.running = false;
    }
    // The failure's last stderr lines are only complete once its pipe has drained.
    if (outcome_.firstFailure && options_.labels == SupervisorOptions::Labels::kAgents &&
        !outcome_.firstFailure->launcherProcess) {
      outcome_.firstFailure->lastStderrLines = labelledStderr_[outcome_.firstFailure->rank];
    } else if (outcome_.firstFailure) {
      for (const Rank& r : ranks_) {
        if (r.spec->rank == outcome_.firstFailure->rank) outcome_.firstFailure->lastStderrLines = r.lastStderr;
      }
    }
    int stopped = 0;
    for (const Rank& r : ranks_) stopped += r.stoppedByUs ? 1 : 0;
    outcome_.ranksStopped = stopped;
    if (outcome_.interruptSignal != 0) {
      outcome_.exitCode = 128 + outcome_.interruptSignal;
    } else if (!outcome_.neverReady.empty()) {
      outcome_.exitCode = 124;
    } else if (outcome_.firstFailure) {
      const RankFailure& f = *outcome_.firstFailure;
      outcome_.exitCode = f.signal != 0 ? 128 + f.signal : f.exitCode;
    }
  }

  // Lines for the console are collected per read and handed over together: one lock and
  // one wake-up of the writer per read, not per line. The batch for fd, after handing over
  // what was collected for the other one (their order is kept).
  std::string& batchFor(int fd) {
    if (fd != batchFd_) flushBatch();
    batchFd_ = fd;
    return batch_;
  }

  // Ends the console line a piece left open, if any: other words must not run into it.
  void endOpenLine() {
    if (!openLine_) return;
    batchFor(openLine_->fd) += '\n';
    openLine_.reset();
  }

  void flushBatch() {
    if (!batch_.empty()) console_.write(batchFd_, batch_);
    batch_.clear();
  }

  // Every rank has ended: what is still queued for the console goes out before hvdrun says
  // anything more. A console that does not take it must not keep hvdrun from exiting with
  // the job's code: after an interrupt it gets kDrainAfterExit, and a stop signal while
  // waiting (Ctrl-C, SIGTERM, SIGHUP) ends the wait at once. The stalled fd is then replaced
  // by /dev/null, so hvdrun's own last words (the summary) cannot block either.
  void waitForConsole() {
    flushBatch();
    std::optional<Clock::time_point> deadline;
    if (outcome_.interruptSignal != 0) deadline = Clock::now() + kDrainAfterExit;
    while (!console_.drained()) {
      if (deadline && Clock::now() >= *deadline) break;
      console_.clearWake();
      if (console_.drained()) break;
      pollfd pfds[2] = {{signalFd_, POLLIN, 0}, {console_.wakeFd(), POLLIN, 0}};
      int timeout = -1;
      if (deadline) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count() + 1;
        timeout = static_cast<int>(std::max<long long>(ms, 0));
      }
      if (::poll(pfds, 2, timeout) < 0 && errno != EINTR) break;
      if (pfds[0].revents & POLLIN) {
        signalfd_siginfo info;
        bool stop = false;
        while (::read(signalFd_, &info, sizeof info) == sizeof info) {
          int sig = static_cast<int>(info.ssi_signo);
          if (!isStop(sig)) continue;
          stop = true;
          if (outcome_.exitCode == 0 && outcome_.interruptSignal == 0) {
            outcome_.interruptSignal = sig;
            outcome_.exitCode = 128 + sig;
          }
        }
        if (stop) break;
      }
    }
    takeConsoleFailures();
    // The ranks had ended, but not all of their output reached the reader.
    if (!outcome_.consoleClosed.empty() && outcome_.exitCode == 0) outcome_.exitCode = 128 + SIGPIPE;
    int stalled = console_.stalledFd();
    if (stalled < 0) return;
    outcome_.consoleStalled = true;
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0) return;
    ::dup2(devnull, stalled);
    ::close(devnull);
  }

  // Pieces a quiet stream gives out (kRedrawQuiet after its last bytes): a progress bar's
  // redraw begun, and where showOpenLines allows, a line begun (a prompt). Only in modes
  // where hvdrun knows whose the rest of the line is: its own ranks and mpirun's tags.
  bool givesOpenLines() const {
    return options_.showOpenLines && (options_.labels == SupervisorOptions::Labels::kNone ||
                                      options_.labels == SupervisorOptions::Labels::kOpenMpi);
  }

  bool holdsPiece(const Stream& s) const {
    if (options_.labels == SupervisorOptions::Labels::kOpenMpi) {
      return givesOpenLines() ? s.tags.holdsPiece() : s.tags.holdsRedraw();
    }
    return givesOpenLines() ? s.splitter.holdsPiece() : s.splitter.holdsRedraw();
  }

  // The earliest moment a held piece is due.
  std::optional<Clock::time_point> pieceDeadline() const {
    std::optional<Clock::time_point> due;
    for (const Rank& r : ranks_) {
      for (const Stream* s : {&r.out, &r.err}) {
        if (s->fd < 0 || !holdsPiece(*s)) continue;
        Clock::time_point at = s->lastData + kRedrawQuiet;
        if (!due || at < *due) due = at;
      }
    }
    return due;
  }

  void flushQuietPieces() {
    Clock::time_point now = Clock::now();
    for (Rank& r : ranks_) {
      for (bool isErr : {false, true}) {
        Stream& s = isErr ? r.err : r.out;
        if (s.fd < 0 || now < s.lastData + kRedrawQuiet || !holdsPiece(s)) continue;
        if (options_.labels == SupervisorOptions::Labels::kOpenMpi) {
          if (givesOpenLines()) {
            s.tags.flushPiece(emitter(r, isErr));
          } else {
            s.tags.flushRedraw(emitter(r, isErr));
          }
          continue;
        }
        auto give = [&](std::string_view line, char end) { route(r, isErr, line, end); };
        if (givesOpenLines()) {
          s.splitter.flushPiece(give);
        } else {
          s.splitter.flushRedraw(give);
        }
      }
    }
    flushBatch();
  }

  // One read: true when it brought bytes (there may be more). Closes the stream at its end.
  bool readSome(Stream& stream, Rank& r, bool isErr) {
    readBuffer_.resize(kReadSize);
    ssize_t n = ::read(stream.fd, readBuffer_.data(), readBuffer_.size());
    if (n > 0) {
      stream.lastData = Clock::now();
      std::string_view bytes(readBuffer_.data(), static_cast<size_t>(n));
      if (options_.labels == SupervisorOptions::Labels::kOpenMpi) {
        stream.tags.feed(bytes, emitter(r, isErr));
      } else {
        stream.splitter.feed(bytes, [&](std::string_view line, char end) { route(r, isErr, line, end); });
      }
      flushBatch();
      return true;
    }
    if (n < 0 && errno == EINTR) return true;
    if (n == 0 || errno != EAGAIN) finishStream(stream, r, isErr);
    return false;
  }

  void finishStream(Stream& stream, Rank& r, bool isErr) {
    if (options_.labels == SupervisorOptions::Labels::kOpenMpi) {
      stream.tags.finish(emitter(r, isErr));
    } else {
      stream.splitter.finish([&](std::string_view line, char end) { route(r, isErr, line, end); });
    }
    // A prompt the stream ended on: the console's next words start a line of their own.
    if (openLine_ && openLine_->process == &r && openLine_->isErr == isErr) endOpenLine();
    flushBatch();
    closeStream(stream);
  }

  // Reads whatever is already buffered in a pipe without blocking, then closes it, even
  // when a process the rank detached (setsid cmd &) still holds the other end: that
  // process's later output is not the job's, and waiting for it spun on EAGAIN until it
  // ended.
  void drain(Stream& stream, Rank& r, bool isErr) {
    if (stream.fd < 0) return;
    ::fcntl(stream.fd, F_SETFL, O_NONBLOCK);
    while (stream.fd >= 0 && readSome(stream, r, isErr)) {
    }
    if (stream.fd >= 0) finishStream(stream, r, isErr);
  }

  // mpirun's lines, put back together per rank from its tagged pieces (OpenMpiTagReader).
  OpenMpiTagReader::OnLine emitter(Rank& r, bool isErr) {
    return [this, &r, isErr](int rank, std::string_view line, char end) { emit(r, isErr, line, rank, end); };
  }

  // A line read from a process: a rank's own, srun's (labelled per line) or a host agent's.
  // end: '\n', or '\r' for a progress bar's redrawn piece (kNone and kAgents).
  void route(Rank& r, bool isErr, std::string_view line, char end) {
    int rank = r.spec->rank;
    if (options_.labels == SupervisorOptions::Labels::kAgents) {
      bool labelled = stripRankPrefix(line, rank);
      if (!labelled && !isErr && !r.greeted) {
        if (auto version = parseAgentHello(line)) {
          r.greeted = true;
          r.version = std::move(*version);
          checkHellos();
          return;
        }
      }
      if (!labelled && isErr) {
        if (auto taken = parseAgentInputTaken(line)) {
          if (stdinSender_ && &r == stdinTo_) stdinSender_->taken(*taken);
          return;
        }
        if (auto ended = parseAgentRankEnd(line)) {
          cleanEnds_.insert(*ended);
          // Heard after a peer's failure that blamed it (the hosts' records race): it
          // returned early all the same.
          auto& first = outcome_.firstFailure;
          if (first && first->peerEndedCleanly < 0 && options_.peerGoneOf && first->rank != *ended &&
              wentFirst(first->rank) == *ended) {
            first->peerEndedCleanly = *ended;
          }
          (void)elasticGoesOnWithout({*ended}, nullptr);
          return;
        }
        if (line == kAgentInputClosed) {
          if (stdinSender_ && &r == stdinTo_) stdinSender_->stop();
          return;
        }
        if (auto failure = parseAgentFailure(line)) {
          if (unneeded_.count(failure->rank)) return;  // raced hvdrun's stop: waiting was all it did
          if (options_.rankEnded) {
            auto last = labelledStderr_.find(failure->rank);
            if (last != labelledStderr_.end()) failure->lastStderrLines = last->second;
            if (elasticGoesOnWithout({failure->rank}, &*failure)) return;
          }
          // The rank awaitRankGone waits for, failing by itself on its agent: the cause.
          if (r.endingByItself && awaitedRank_ == failure->rank) {
            takeOverCause(std::move(*failure));
            return;
          }
          bool crashed = failure->signal != 0;
          noteFailure(std::move(*failure), crashed);
          return;
        }
      }
      emit(r, isErr, line, labelled ? rank : -1, end);
      return;
    }
    bool labelled = options_.labels != SupervisorOptions::Labels::kSrun || stripSrunLabel(line, rank);
    // srun labels Slurm's own words about the step ("slurmstepd: error: *** STEP 7.0 ON
    // node01 CANCELLED AT ... ***"; "slurmstepd-node01:" where one host runs several
    // slurmds) with a task's number; they are Slurm's, not the rank's.
    if (labelled && options_.labels == SupervisorOptions::Labels::kSrun &&
        (line.substr(0, 11) == "slurmstepd:" || line.substr(0, 11) == "slurmstepd-")) {
      labelled = false;
    }
    emit(r, isErr, line, labelled ? rank : -1, end);
  }

  // rank -1: the launcher's own words (srun's, mpirun's), printed without a prefix.
  // end '\r': a progress bar's redraw, passed on as such (a terminal draws it over the last
  // one); not remembered among the last stderr lines, which are for the error.
  void emit(Rank& r, bool isErr, std::string_view line, int rank, char end = '\n') {
    bool labelled = rank >= 0;
    if (end == '\r' && line.empty()) return;  // the '\r' before a bar's first drawing
    if (isErr && end != '\r' && end != LineSplitter::kOpenEnd) {
      bool launcher = options_.labels != SupervisorOptions::Labels::kNone;
      // A host agent's own words stay its own: they explain that agent's end.
      bool agentOwn = options_.labels == SupervisorOptions::Labels::kAgents && !labelled;
      auto& last = launcher && !agentOwn ? labelledStderr_[labelled ? rank : -1] : r.lastStderr;
      last.emplace_back(line.substr(0, kRememberedLineLength));
      if (last.size() > kRememberedStderrLines) last.pop_front();
      if (!labelled) launcherMessages_.emplace_back(line);
      // ssh's words before its agent said hello explain a host problem, reported in one
      // table once every host has answered, not line by line as they come.
      if (agentOwn && !r.greeted) return;
    }
    if (!options_.outputDir.empty() && labelled) writeToFile(rank, isErr, line, end);
    if (labelled && !options_.consoleRanks.empty() && !options_.consoleRanks.count(rank)) return;
    // Whole lines through one queue: lines of different ranks never interleave. A line
    // given out open (a prompt) is continued by the rest of it, or ended before anything
    // else is written.
    const int fd = isErr ? STDERR_FILENO : STDOUT_FILENO;
    const bool continues =
        openLine_ && openLine_->process == &r && openLine_->rank == rank && openLine_->isErr == isErr;
    if (!continues) endOpenLine();
    openLine_.reset();
    std::string& out = batchFor(fd);
    if (!continues && options_.timestamps) out += timestampNow() + ' ';
    if (!continues && options_.prefixOutput && labelled) out += prefixOf(rank, isErr);
    out += line;
    if (end == LineSplitter::kOpenEnd) {
      openLine_ = OpenLine{&r, rank, isErr, fd};
    } else {
      out += end;
    }
  }

  // "[3]<stdout>:", made once per rank and stream: building it per line cost a fifth of
  // hvdrun's time when ranks write fast.
  // A number beyond the job's ranks (a launcher's label gone wrong) is not cached.
  const std::string& prefixOf(int rank, bool isErr) {
    auto& prefixes = isErr ? errPrefixes_ : outPrefixes_;
    if (rank >= std::max(options_.rankCount, static_cast<int>(ranks_.size()))) {
      uncachedPrefix_ = '[' + std::to_string(rank) + (isErr ? "]<stderr>:" : "]<stdout>:");
      return uncachedPrefix_;
    }
    if (rank >= static_cast<int>(prefixes.size())) prefixes.resize(static_cast<size_t>(rank) + 1);
    std::string& p = prefixes[static_cast<size_t>(rank)];
    if (p.empty()) p = '[' + std::to_string(rank) + (isErr ? "]<stderr>:" : "]<stdout>:");
    return p;
  }

  static std::string timestampNow() {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char buf[40];
    size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
    std::snprintf(buf + n, sizeof buf - n, ".%03d", ms);
    return buf;
  }

  // Appends the line to outputDir/rank.N/{stdout,stderr}, opening files on first use. A
  // file that cannot be written is reported once; the job goes on.
  void writeToFile(int rank, bool isErr, std::string_view line, char end) {
    int fd = fileFor(rank, isErr);
    if (fd < 0) return;
    std::string text(line);
    if (end != LineSplitter::kOpenEnd) text += end;
    for (std::string_view data = text; !data.empty();) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        // A full or failing file system: say so once for this file, and write no more
        // there (the rest would be missing from the middle, not only the end).
        fileProblem(options_.outputDir + "/rank." + std::to_string(rank) + (isErr ? "/stderr" : "/stdout"),
                    "writing", errno);
        ::close(fd);
        files_[std::make_pair(rank, isErr)] = -1;
        return;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  void fileProblem(const std::string& path, const char* doing, int error) {
    std::string what = std::string(doing) + " " + path + ": " + std::strerror(error);
    endOpenLine();
    batchFor(STDERR_FILENO) += "hvdrun: warning: " + what + "; that rank's output file is incomplete\n";
    if (outcome_.outputProblem.empty()) outcome_.outputProblem = what;
    ++outcome_.incompleteOutputFiles;
  }

  // The file's descriptor, opened (truncated, or appended to) on first use; -1 when unwritable.
  int fileFor(int rank, bool isErr) {
    auto key = std::make_pair(rank, isErr);
    auto it = files_.find(key);
    if (it == files_.end()) {
      std::string dir = options_.outputDir + "/rank." + std::to_string(rank);
      std::string path = dir + (isErr ? "/stderr" : "/stdout");
      int fd = -1;
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        fileProblem(dir, "creating", errno);  // mkdir's reason (EROFS), not the open's ENOENT
      } else if ((fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC |
                                                (options_.appendOutputFiles ? O_APPEND : O_TRUNC),
                              0644)) < 0) {
        fileProblem(path, "opening", errno);
      }
      it = files_.emplace(key, fd).first;
    }
    return it->second;
  }

  // "[3]<stdout>:text" (or <stderr>) -> rank 3, "text"; false (line unchanged) otherwise.
  static bool stripRankPrefix(std::string_view& line, int& rank) {
    if (line.empty() || line[0] != '[') return false;
    size_t i = 1;
    while (i < line.size() && i < 12 && line[i] >= '0' && line[i] <= '9') ++i;
    constexpr std::string_view kOut = "]<stdout>:", kErr = "]<stderr>:";
    std::string_view rest = line.substr(i);
    if (i == 1 || (rest.substr(0, kOut.size()) != kOut && rest.substr(0, kErr.size()) != kErr)) return false;
    rank = std::atoi(std::string(line.substr(1, i - 1)).c_str());
    line.remove_prefix(i + kOut.size());
    return true;
  }

  // "  3: text" -> rank 3, "text"; false (line unchanged) when there is no such label.
  static bool stripSrunLabel(std::string_view& line, int& rank) {
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    size_t digits = i;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    if (i == digits || i >= line.size() || line[i] != ':') return false;
    rank = std::atoi(std::string(line.substr(digits, i - digits)).c_str());
    line.remove_prefix(i + 1);
    if (!line.empty() && line[0] == ' ') line.remove_prefix(1);
    return true;
  }

 public:
  const std::map<int, std::deque<std::string>>& labelledStderr() const { return labelledStderr_; }
  const std::vector<std::string>& launcherMessages() const { return launcherMessages_; }

 private:
  static void closeStream(Stream& s) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }

  SupervisorOptions options_;
  ConsoleWriter console_;  // hvdrun's stdout and stderr, written by a thread of their own
  std::string batch_;      // lines for batchFd_ not yet handed to console_
  // The console line a piece left open (LineSplitter::kOpenEnd, a prompt), and whose it is.
  struct OpenLine {
    const Rank* process;
    int rank;  // the line's label (a launcher's own words: -1)
    bool isErr;
    int fd;
  };
  std::optional<OpenLine> openLine_;
  std::vector<std::string> outPrefixes_, errPrefixes_;  // by rank: "[N]<stdout>:", "[N]<stderr>:"
  std::string uncachedPrefix_;
  std::vector<char> readBuffer_;  // one read's bytes (kReadSize)
  int batchFd_ = STDOUT_FILENO;
  std::deque<Rank> ranks_;  // a deque: ranks added while the job runs leave the others where they are
  std::deque<RankProcess> addedSpecs_;  // theirs (changeRanks)
  std::optional<Clock::time_point> changeDeadline_;  // when changeRanks is asked next
  std::optional<Clock::time_point> frozenDeadline_;  // when frozen ranks are looked for next
  std::map<int, Clock::time_point> frozenSince_;     // ranks found frozen, since when
  int signalFd_ = -1;
  bool ranksHeld_ = false;        // holdRanks(true) and not yet continued
  Clock::duration pausedFor_{};   // hvdrun stopped by Ctrl-Z, not yet taken off the deadlines
  sigset_t oldMask_{};
  JobOutcome outcome_;
  std::map<int, std::deque<std::string>> labelledStderr_;  // labelled modes: per rank; -1: the launcher itself
  std::vector<std::string> launcherMessages_;
  std::map<std::pair<int, bool>, int> files_;  // (rank, stderr?) -> fd; -1 when unwritable
  Clock::time_point firstFailureAt_{};
  std::set<int> departed_;  // elastic training: ranks that ended by themselves
  std::set<int> unneeded_;  // and ranks it stopped as no longer needed (AfterRankEnd::stop)
  std::optional<Clock::time_point> unneededKillDeadline_;  // SIGKILL for those still running
  std::function<void()> onceUnneededStopped_;
  std::optional<Clock::time_point> preemptDeadline_;  // set by the preemption signal with a grace
  std::optional<Clock::time_point> killDeadline_;     // SIGKILL for whatever still runs then
  std::optional<Clock::time_point> ownEndDeadline_;   // awaitRankGone's rank is stopped then
  std::optional<rlimit> raisedFrom_;  // the descriptor limit before reserveDescriptors raised it
  std::optional<int> awaitedRank_;                    // the rank awaitRankGone leaves to end by itself
  std::set<int> cleanEnds_;                           // ranks host agents said exited 0 by themselves
  std::optional<Clock::time_point> helloDeadline_;    // kAgents: every hello by then
  bool agentsGreeted_ = false;                        // kAgents: every job went out
  bool helloFailed_ = false;                          // kAgents: none will
  // --stdin forwarded: the rank (kNone) or agent (kAgents) it goes to, and the half here.
  Rank* stdinTo_ = nullptr;
  std::optional<StdinSender> stdinSender_;
  std::unique_ptr<StdinFeeder> stdinFeeder_;
  static constexpr std::chrono::milliseconds kCauseWindow{250};
};

}  // namespace

Status checkDescriptorRoom(size_t rankCount, bool outputFiles) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) return Status::ok();
  if (limit.rlim_max >= descriptorsHeld(rankCount, outputFiles)) return Status::ok();
  // The hint names the hard limit: what superviseRanks would have raised the soft one to.
  return outOfDescriptors(systemError("starting " + std::to_string(rankCount) + " ranks", EMFILE), rankCount, EMFILE,
                          limit.rlim_max);
}

std::string nowIso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

Result<JobOutcome> superviseRanks(const std::vector<RankProcess>& ranks, const SupervisorOptions& options) {
  Job job(ranks, options);
  auto outcome = job.run();
  if (outcome && options.labels != SupervisorOptions::Labels::kNone) {
    outcome->launcherStderr = job.labelledStderr();
    outcome->launcherMessages = job.launcherMessages();
  }
  return outcome;
}

}  // namespace hvd::cli
