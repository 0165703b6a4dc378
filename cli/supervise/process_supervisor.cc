// cli/supervise/process_supervisor.cc: the poll loop over the processes' output pipes, a
// signalfd and the deadlines, and Ctrl-Z. Single-threaded: one loop owns every process's
// state. Who ended the job is the end policy's to say (end_policy.h), where each line goes
// the output router's (output_router.h), what goes to a process's stdin and what a host agent
// reports the agent links' (agent_links.h).
#include "cli/supervise/process_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "cli/os/console_writer.h"
#include "cli/os/process_table.h"
#include "cli/supervise/agent_links.h"
#include "cli/supervise/end_policy.h"
#include "cli/supervise/output_router.h"
#include "cli/supervise/spawn.h"

namespace hvd::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Once every process has exited, how long we still read output that their leftover children
// may be writing before we stop them too.
constexpr std::chrono::milliseconds kDrainAfterExit{1000};
// A rank's stdout pipe holds up to 1 MiB (the kernel's default is 64 KiB), and one read
// takes it whole: ranks that write fast wait less, and hvdrun wakes less often (10-15% more
// throughput in bench/output_bench). All ranks' pipes together stay within 16 MiB, a quarter
// of the user's pipe budget (fs.pipe-user-pages-soft, 64 MiB by default), past which the
// kernel would shrink every new pipe of that user, the ranks' own included.
constexpr int kMaxPipeSize = 1 << 20;
constexpr size_t kPipeBudget = size_t{16} << 20;
constexpr size_t kReadSize = 1 << 20;
// A progress bar's redraw that has begun goes out once its stream is quiet this long
// (LineSplitter::holdsRedraw): the console then shows the bar's state, not the one before.
constexpr std::chrono::milliseconds kRedrawQuiet{150};

const int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};

// What a stopped process acts on only once continued.
bool isStop(int sig) { return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT; }

struct Stream {
  int fd = -1;
  std::unique_ptr<LineReader> reader;
  Clock::time_point lastData{};  // when bytes last came
};

struct Process {
  const RankProcess* spec = nullptr;
  size_t index = 0;  // its place among the job's processes (the end policy's and router's index)
  pid_t pid = -1;
  bool running = false;
  Stream out, err;
};

class Supervisor final : public EndPolicy::Processes {
 public:
  Supervisor(const std::vector<RankProcess>& specs, const SupervisorOptions& options)
      : options_(options),
        router_(outputSettings(options), [this](int fd, std::string_view text) { console_.write(fd, text); }),
        policy_(options_, *this),
        links_(options_, *this, policy_, router_) {
    processes_.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      processes_[i].spec = &specs[i];
      processes_[i].index = i;
      prepareStreams(processes_[i]);
    }
    links_.findStdinRank();
  }

  ~Supervisor() override {
    for (Process& r : processes_) {
      closeStream(r.out);
      closeStream(r.err);
    }
    if (signalFd_ >= 0) ::close(signalFd_);
    ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
  }

  Result<JobOutcome> run() {
    auto raised = reserveDescriptors(processes_.size(), !options_.outputDir.empty());
    if (!raised) return raised.status();
    raisedFrom_ = *raised;
    HVD_RETURN_IF_ERROR(installSignals());
    // Every rank has both files, also one that never writes (an empty file says "silent"; a
    // missing one would look like a lost rank).
    for (int rank = 0; rank < options_.rankCount; ++rank) router_.createFiles(rank);
    for (Process& r : processes_) {
      if (Status s = start(r); !s.isOk()) {
        policy_.killAll();
        reapAll();
        return s;
      }
    }
    loop();
    waitForConsole();
    JobOutcome outcome = policy_.outcome();
    outcome.incompleteOutputFiles = router_.incompleteFiles();
    outcome.outputProblem = router_.fileProblem();
    if (options_.processes != SupervisorOptions::Processes::kRanks) {
      outcome.launcherStderr = router_.labelledStderr();
      outcome.launcherMessages = router_.launcherMessages();
    }
    return outcome;
  }

  // EndPolicy::Processes
  size_t count() const override { return processes_.size(); }
  const RankProcess& spec(size_t p) const override { return *processes_[p].spec; }
  pid_t pid(size_t p) const override { return processes_[p].pid; }
  bool running(size_t p) const override { return processes_[p].running; }
  bool dying(size_t p) const override { return processEnding(processes_[p].pid); }
  bool beforeJobsSent() const override { return links_.beforeJobsSent(); }
  bool held() const override { return ranksHeld_; }
  std::deque<std::string> lastStderr(size_t p) const override { return router_.lastStderr(p); }
  std::deque<std::string> labelledStderr(int rank) const override {
    auto it = router_.labelledStderr().find(rank);
    return it != router_.labelledStderr().end() ? it->second : std::deque<std::string>{};
  }

  // A host agent hears signals on its stdin and passes them to its ranks; SIGKILL ends the
  // agent (or its ssh) itself, and the agent's ranks die with the connection. Before the
  // jobs went out there is nothing to pass a notice to, and a stop ends the connection.
  void signal(size_t p, int sig) override {
    // An agent still running at the kill grace's end may be frozen and unable to read the
    // order: killed where it runs as well, and its ssh here with it.
    if (hostAgents() && sig == SIGKILL) {
      links_.killThere(p);
      ::kill(processes_[p].pid, SIGKILL);
    }
    if (links_.signal(p, sig)) return;
    const pid_t pid = processes_[p].pid;
    ::kill(-pid, sig);
    // A stopped process acts on a stop request only once continued (as Slurm and systemd
    // do): without this, a frozen rank waited for the SIGKILL at the grace's end.
    if (isStop(sig)) ::kill(-pid, SIGCONT);
  }

  bool orderStop(size_t p, int rank) override { return links_.orderStop(p, rank); }

  std::set<size_t> frozen(const std::set<size_t>& candidates) const override {
    std::map<pid_t, size_t> processOfSession;
    std::set<pid_t> sessions;
    for (size_t p : candidates) {
      processOfSession[processes_[p].pid] = p;
      sessions.insert(processes_[p].pid);
    }
    std::set<size_t> frozen;
    for (const ProcessInfo& info : processesInSessions(sessions)) {
      if (info.state == 'T' || info.state == 't') frozen.insert(processOfSession[info.session]);
    }
    return frozen;
  }

 private:
  static OutputSettings outputSettings(const SupervisorOptions& o) {
    OutputSettings s;
    s.prefixOutput = o.prefixOutput;
    s.timestamps = o.timestamps;
    s.consoleRanks = o.consoleRanks;
    s.outputDir = o.outputDir;
    s.appendOutputFiles = o.appendOutputFiles;
    s.rankCount = o.rankCount;
    s.launcherOutput = o.processes == SupervisorOptions::Processes::kLauncher;
    s.hostAgents = o.processes == SupervisorOptions::Processes::kHostAgents;
    return s;
  }

  bool hostAgents() const { return options_.processes == SupervisorOptions::Processes::kHostAgents; }
  bool forkedRanks() const { return options_.processes == SupervisorOptions::Processes::kRanks; }
  void prepareStreams(Process& r) const {
    // An agent's lines carry its rank's prefix before a line it already cut: room for both.
    const size_t room = options_.maxLineBytes + (hostAgents() ? 64 : 0);
    for (bool isErr : {false, true}) {
      Stream& s = isErr ? r.err : r.out;
      s.reader = options_.lineReader ? options_.lineReader(*r.spec, isErr, room) : rankLineReader(r.spec->rank, room);
    }
  }

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

  Status start(Process& r) {
    SpawnRequest request;
    request.process = r.spec;
    request.stdinPipe = links_.wantsStdinPipe(r.index);
    request.processCount = processes_.size();
    request.started = static_cast<size_t>(
        std::count_if(processes_.begin(), processes_.end(), [](const Process& x) { return x.pid > 0; }));
    request.fileLimit = raisedFrom_;
    request.beforeRun = options_.onRankStarted;
    auto spawned = spawnProcess(request);
    if (!spawned) return spawned.status();
    r.pid = spawned->pid;
    r.running = true;
    r.out.fd = spawned->stdoutFd;
    if (size_t share = kPipeBudget / processes_.size(); share > 65536) {
      ::fcntl(r.out.fd, F_SETPIPE_SZ, static_cast<int>(std::min<size_t>(share, kMaxPipeSize)));
    }
    r.err.fd = spawned->stderrFd;
    links_.started(r.index, spawned->stdinFd);
    return spawned->execFailed;
  }

  // Elastic training (SupervisorOptions::changeRanks): the ranks it gives now, started beside
  // the others, and those it takes away.
  void changeRanks() {
    const auto now = Clock::now();
    changeDeadline_ = now + options_.changeRanksEvery;
    if (policy_.ending()) return;
    auto changes = options_.changeRanks();
    policy_.stopUnneeded(changes.stop, nullptr, now);
    for (RankProcess& spec : changes.start) {
      addedSpecs_.push_back(std::move(spec));
      Process& r = processes_.emplace_back();
      r.spec = &addedSpecs_.back();
      r.index = processes_.size() - 1;
      prepareStreams(r);
      router_.createFiles(r.spec->rank);
      if (Status started = start(r); !started.isOk()) {
        std::fprintf(stderr, "hvdrun: %s\n", started.message().c_str());
        RankFailure f;
        f.rank = r.spec->rank;
        f.host = r.spec->host;
        f.exitCode = 127;
        f.when = nowIso8601();
        policy_.startFailed(f, Clock::now());
      }
    }
  }

  void loop() {
    std::optional<Clock::time_point> drainDeadline;
    std::optional<Clock::time_point> startDeadline;
    if (options_.startTimeout.count() > 0 && options_.readyRanks) startDeadline = Clock::now() + options_.startTimeout;
    links_.startHelloPhase(Clock::now());
    if (options_.changeRanks) changeDeadline_ = Clock::now() + options_.changeRanksEvery;
    if (options_.frozenFails) frozenDeadline_ = Clock::now() + std::chrono::seconds(1);
    links_.startBeating(Clock::now());
    while (true) {
      bool anyRunning = false, anyOpen = false;
      for (const Process& r : processes_) {
        anyRunning |= r.running;
        anyOpen |= r.out.fd >= 0 || r.err.fd >= 0;
      }
      if (!anyRunning && !anyOpen) break;
      if (!anyRunning && !drainDeadline) drainDeadline = Clock::now() + kDrainAfterExit;
      if (drainDeadline && Clock::now() >= *drainDeadline) {
        // Only leftover children of finished processes hold the pipes now: stop them.
        policy_.killAll(/*includeExited=*/true);
        for (Process& r : processes_) {
          drain(r.out, r, false);
          drain(r.err, r, true);
        }
        break;
      }
      policy_.onTime(Clock::now());
      if (startDeadline && Clock::now() >= *startDeadline) {
        startDeadline.reset();
        policy_.startTimedOut(Clock::now());
      }
      if (links_.helloDeadline() && Clock::now() >= *links_.helloDeadline()) links_.checkHellos();
      if (changeDeadline_ && Clock::now() >= *changeDeadline_) changeRanks();
      if (frozenDeadline_ && Clock::now() >= *frozenDeadline_) {
        frozenDeadline_ = Clock::now() + std::chrono::seconds(1);
        policy_.lookForFrozen(Clock::now());
      }
      links_.beatAndWatch(Clock::now(), [this](size_t p) {
        const Process& r = processes_[p];
        return r.running ? std::optional(std::max(r.out.lastData, r.err.lastData)) : std::nullopt;
      });

      std::vector<pollfd> pfds{{signalFd_, POLLIN, 0}};
      std::vector<std::pair<Process*, bool>> owners{{nullptr, false}};
      // A console that does not keep up: read no more output until it has taken some (the
      // ranks wait on their pipes, as on a slow terminal); signals and deadlines go on.
      const bool consoleFull = console_.full();
      if (consoleFull) links_.notReading(Clock::now());  // an agent's silence meanwhile is not its own
      if (consoleFull) {
        console_.clearWake();
        pfds.push_back({console_.wakeFd(), POLLIN, 0}), owners.push_back({nullptr, false});
      }
      // A console write that failed: nobody may write again for a long time to find out.
      const size_t consoleFailure = pfds.size();
      pfds.push_back({console_.failureFd(), POLLIN, 0}), owners.push_back({nullptr, false});
      const size_t firstOutput = pfds.size();
      for (Process& r : processes_) {
        if (consoleFull) break;
        if (r.out.fd >= 0) pfds.push_back({r.out.fd, POLLIN, 0}), owners.push_back({&r, false});
        if (r.err.fd >= 0) pfds.push_back({r.err.fd, POLLIN, 0}), owners.push_back({&r, true});
      }
      const size_t outputFds = pfds.size();
      links_.addPolls(pfds);
      flushQuietPieces();
      int timeout = -1;
      for (auto deadline : {policy_.nextDeadline(), drainDeadline, startDeadline, links_.helloDeadline(), pieceDeadline(),
                            links_.retryAt(), changeDeadline_, frozenDeadline_, links_.beatAt()}) {
        if (!deadline) continue;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count() + 1;
        timeout = timeout < 0 ? static_cast<int>(std::max<long long>(ms, 0))
                              : std::min(timeout, static_cast<int>(std::max<long long>(ms, 0)));
      }
      int rc = ::poll(pfds.data(), pfds.size(), timeout);
      if (rc < 0 && errno != EINTR) break;
      for (size_t i = firstOutput; i < outputFds; ++i) {
        if ((pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        auto [process, isErr] = owners[i];
        readSome(isErr ? process->err : process->out, *process, isErr);
      }
      links_.polled(pfds);
      if (pfds[0].revents & POLLIN) handleSignals();
      if (pfds[consoleFailure].revents & POLLIN) takeConsoleFailures();
      if (pausedFor_ > Clock::duration::zero()) {
        for (auto* deadline : {&drainDeadline, &startDeadline}) {
          if (*deadline) **deadline += pausedFor_;
        }
        policy_.shiftDeadlines(pausedFor_);
        links_.shiftDeadlines(pausedFor_);
        pausedFor_ = Clock::duration::zero();
        links_.notReading(Clock::now());  // hvdrun itself was stopped: nobody read meanwhile
      }
    }
    reapAll();
  }

  void handleSignals() {
    signalfd_siginfo info;
    while (::read(signalFd_, &info, sizeof info) == sizeof info) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) {
        reapExited();
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
      policy_.signalReceived(sig, Clock::now());
    }
  }

  // Failed writes to hvdrun's console. EPIPE: its reader went away (`hvdrun ... | head`).
  // Anything else (a full disk): the job goes on, its output there is incomplete, and hvdrun
  // says so now and with its exit code.
  void takeConsoleFailures() {
    for (auto [fd, error] : console_.takeFailures()) {
      const std::string name = fd == STDOUT_FILENO ? "stdout" : fd == STDERR_FILENO ? "stderr" : "the console";
      if (error == EPIPE) {
        policy_.consoleClosed(name, Clock::now());
        continue;
      }
      std::string what = "writing " + name + ": " + std::strerror(error);
      JobOutcome& outcome = policy_.outcome();
      if (outcome.consoleProblem.empty()) outcome.consoleProblem = what;
      // Once the ranks are done, the job's last words say it.
      const bool anyRunning = std::any_of(processes_.begin(), processes_.end(), [](const Process& r) { return r.running; });
      if (fd != STDERR_FILENO && anyRunning) {
        router_.own(STDERR_FILENO, "hvdrun: warning: " + what + "; the ranks' output there is incomplete from here on\n");
      }
    }
  }

  // Ctrl-Z. Ranks run in sessions of their own, out of reach of the terminal's SIGTSTP, and
  // would go on while the shell says the job is stopped: writing into pipes nobody drains,
  // holding GPUs, and timing out in their collectives at `fg`. So hvdrun holds them first and
  // then stops itself with the same signal (SIGTSTP's own action, which the kernel drops where
  // no shell could continue hvdrun: an orphaned process group; then the ranks go on at once).
  // Time stopped does not count against hvdrun's deadlines, but for the preemption grace,
  // which is the scheduler's clock.
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

  // Stops (hold) or continues every running process. Only a hold is undone: a SIGCONT after a
  // `kill -STOP` of hvdrun itself (which hvdrun cannot see) continues no rank. Forked ranks
  // get SIGSTOP: SIGTSTP's default action is dropped for their orphaned process groups.
  void holdRanks(bool hold) {
    if (!hold && !ranksHeld_) return;
    ranksHeld_ = hold;
    const int sig = hold ? (forkedRanks() ? SIGSTOP : SIGTSTP) : SIGCONT;
    for (Process& r : processes_) {
      if (!r.running || r.pid <= 0) continue;
      if (!links_.hold(r.index, sig)) ::kill(-r.pid, sig);
    }
  }

  // Reaps every child that has exited; the end policy decides what each end means. A host
  // agent's last words are read first: a record still in the pipe would otherwise lose to the
  // agent's exit status.
  void reapExited() {
    while (true) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (size_t p = 0; p < processes_.size(); ++p) {
        Process& r = processes_[p];
        if (r.pid != pid || !r.running) continue;
        r.running = false;
        if (hostAgents()) {
          drain(r.out, r, false);
          drain(r.err, r, true);
          links_.ended(p, status);
          if (!policy_.unneeded(p) && links_.beforeJobsSent()) {
            links_.checkHellos();
            continue;
          }
        }
        policy_.processEnded(p, status, Clock::now());
      }
    }
  }

  void reapAll() {
    for (Process& r : processes_) {
      if (!r.running) continue;
      int status = 0;
      while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.running = false;
    }
    policy_.finish();
  }

  // Every process has ended: what is still queued for the console goes out before hvdrun
  // says anything more. A console that does not take it must not keep hvdrun from exiting
  // with the job's code: after an interrupt it gets kDrainAfterExit, and a stop signal while
  // waiting (Ctrl-C, SIGTERM, SIGHUP) ends the wait at once. The stalled fd is then replaced
  // by /dev/null, so hvdrun's own last words (the summary) cannot block either.
  void waitForConsole() {
    router_.flush();
    JobOutcome& outcome = policy_.outcome();
    std::optional<Clock::time_point> deadline;
    if (outcome.interruptSignal != 0) deadline = Clock::now() + kDrainAfterExit;
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
          const int sig = static_cast<int>(info.ssi_signo);
          if (!isStop(sig)) continue;
          stop = true;
          if (outcome.exitCode == 0 && outcome.interruptSignal == 0) {
            outcome.interruptSignal = sig;
            outcome.exitCode = 128 + sig;
          }
        }
        if (stop) break;
      }
    }
    takeConsoleFailures();
    // The processes had ended, but not all of their output reached the reader.
    if (!outcome.consoleClosed.empty() && outcome.exitCode == 0) outcome.exitCode = 128 + SIGPIPE;
    const int stalled = console_.stalledFd();
    if (stalled < 0) return;
    outcome.consoleStalled = true;
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0) return;
    // Its twin goes too: with `2>&1 | reader` stderr is the same full pipe, and the summary
    // written there would block as the ranks' lines did. So does any console fd that could
    // not take a byte now.
    struct stat stalledFile {};
    const bool known = ::fstat(stalled, &stalledFile) == 0;
    for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      struct stat file {};
      pollfd writable{fd, POLLOUT, 0};
      const bool twin = known && ::fstat(fd, &file) == 0 && file.st_dev == stalledFile.st_dev &&
                        file.st_ino == stalledFile.st_ino;
      const bool full = ::poll(&writable, 1, 0) == 0;
      if (fd == stalled || twin || full) ::dup2(devnull, fd);
    }
    ::close(devnull);
  }

  // The earliest moment a held piece is due.
  std::optional<Clock::time_point> pieceDeadline() const {
    std::optional<Clock::time_point> due;
    for (const Process& r : processes_) {
      for (const Stream* s : {&r.out, &r.err}) {
        if (s->fd < 0 || !s->reader->holdsPiece(options_.showOpenLines)) continue;
        Clock::time_point at = s->lastData + kRedrawQuiet;
        if (!due || at < *due) due = at;
      }
    }
    return due;
  }

  // Pieces a quiet stream gives out (kRedrawQuiet after its last bytes): a progress bar's
  // redraw begun, and where showOpenLines allows, a line begun (a prompt).
  void flushQuietPieces() {
    const Clock::time_point now = Clock::now();
    for (Process& r : processes_) {
      for (bool isErr : {false, true}) {
        Stream& s = isErr ? r.err : r.out;
        if (s.fd < 0 || now < s.lastData + kRedrawQuiet || !s.reader->holdsPiece(options_.showOpenLines)) continue;
        s.reader->flushPiece(options_.showOpenLines, lineHandler(r, isErr));
      }
    }
    router_.flush();
  }

  // One read: true when it brought bytes (there may be more). Closes the stream at its end.
  bool readSome(Stream& stream, Process& r, bool isErr) {
    readBuffer_.resize(kReadSize);
    const ssize_t n = ::read(stream.fd, readBuffer_.data(), readBuffer_.size());
    if (n > 0) {
      stream.lastData = Clock::now();
      stream.reader->feed(std::string_view(readBuffer_.data(), static_cast<size_t>(n)), lineHandler(r, isErr));
      router_.flush();
      return true;
    }
    if (n < 0 && errno == EINTR) return true;
    if (n == 0 || errno != EAGAIN) finishStream(stream, r, isErr);
    return false;
  }

  void finishStream(Stream& stream, Process& r, bool isErr) {
    stream.reader->finish(lineHandler(r, isErr));
    router_.streamEnded(r.index, isErr);
    closeStream(stream);
  }

  // Reads whatever is already buffered in a pipe without blocking, then closes it, even when
  // a process the rank detached (setsid cmd &) still holds the other end: that process's
  // later output is not the job's, and waiting for it spun on EAGAIN until it ended.
  void drain(Stream& stream, Process& r, bool isErr) {
    if (stream.fd < 0) return;
    ::fcntl(stream.fd, F_SETFL, O_NONBLOCK);
    while (stream.fd >= 0 && readSome(stream, r, isErr)) {
    }
    if (stream.fd >= 0) finishStream(stream, r, isErr);
  }

  LineReader::OnLine lineHandler(Process& r, bool isErr) {
    return [this, &r, isErr](int rank, std::string_view line, char end) { route(r, isErr, rank, line, end); };
  }

  // A line read from a process. A host agent's own lines (no rank's prefix) are its hello
  // and its records for hvdrun, taken by the agent links instead of printed.
  void route(Process& r, bool isErr, int rank, std::string_view line, char end) {
    bool toConsole = true;
    if (hostAgents() && rank < 0 && links_.takeOwnLine(r.index, isErr, line, toConsole)) return;
    router_.line(r.index, isErr, rank, line, end, toConsole);
  }

  static void closeStream(Stream& s) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }

  SupervisorOptions options_;
  ConsoleWriter console_;  // hvdrun's stdout and stderr, written by a thread of their own
  OutputRouter router_;
  EndPolicy policy_;
  // A deque: processes added while the job runs leave the others where they are.
  std::deque<Process> processes_;
  AgentLinks links_;
  std::vector<char> readBuffer_;  // one read's bytes (kReadSize)
  std::deque<RankProcess> addedSpecs_;               // theirs (changeRanks)
  std::optional<Clock::time_point> changeDeadline_;  // when changeRanks is asked next
  std::optional<Clock::time_point> frozenDeadline_;  // when frozen ranks are looked for next
  int signalFd_ = -1;
  bool ranksHeld_ = false;       // holdRanks(true) and not yet continued
  Clock::duration pausedFor_{};  // hvdrun stopped by Ctrl-Z, not yet taken off the deadlines
  sigset_t oldMask_{};
  std::optional<rlimit> raisedFrom_;  // the descriptor limit before it was raised
};

}  // namespace

Result<JobOutcome> superviseRanks(const std::vector<RankProcess>& processes, const SupervisorOptions& options) {
  Supervisor supervisor(processes, options);
  return supervisor.run();
}

}  // namespace hvd::cli
