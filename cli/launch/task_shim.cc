// cli/launch/task_shim.cc: exec-rank as its rank's parent (task_shim.h).
#include "cli/launch/task_shim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <thread>

#include "cli/launch/rank_failure.h"
#include "cli/launch/torch_error_file.h"
#include "cli/os/adopted_orphans.h"
#include "cli/os/console.h"
#include "cli/os/inherited_signals.h"
#include "cli/os/oom_kills.h"
#include "cli/os/subprocess.h"
#include "runtime/common/shm_names.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {
namespace {

// The signals srun, Slurm and Open MPI send a task. The rank gets them itself; the shim
// must live on to report its end.
sigset_t taskSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGCONT}) sigaddset(&set, sig);
  return set;
}

// Whether the launcher had told this task to stop when its rank ended: what reached the
// rank reached this process too, and waits here blocked. Slurm may signal the rank a moment
// before the shim (it walks the step's processes one by one), so an end that looks like
// obeying such a signal waits up to 250 ms for the shim's own; a kill by hand never comes.
bool toldToStop(const TaskEnd& end) {
  sigset_t stops, pending;
  sigemptyset(&stops);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&stops, sig);
  ::sigpending(&pending);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&stops, sig) == 1 && sigismember(&pending, sig) == 1) return true;
  }
  const int obeyed = end.signal != 0 ? end.signal : end.exitCode > 128 ? end.exitCode - 128 : 0;
  if (obeyed == 0 || sigismember(&stops, obeyed) != 1) return false;
  timespec wait{0, 250'000'000};
  return ::sigtimedwait(&stops, nullptr, &wait) > 0;
}

// hvdrun's rendezvous, where the rank's own runtime would connect; nullopt when the job has
// none or it cannot be reached (hvdrun is gone: then nobody is left to tell).
std::optional<rendezvous::Client> connectToHvdrun(const std::vector<std::string>& env, std::chrono::milliseconds timeout) {
  std::string addr = valueInEnvironment(env, "HVD_RENDEZVOUS_ADDR"), port = valueInEnvironment(env, "HVD_RENDEZVOUS_PORT"),
              secret = valueInEnvironment(env, "HVD_SECRET_KEY");
  if (addr.empty() || port.empty() || secret.empty()) return std::nullopt;
  auto client = rendezvous::Client::connect(addr, std::atoi(port.c_str()), secret, timeout);
  if (!client) return std::nullopt;
  return std::move(*client);
}

// Shared with the coordinator thread, which may outlive runTaskShim's frame.
std::atomic<pid_t> gChild{0};
std::atomic<bool> gStoppedForCoordinator{false};

// A ParameterServerStrategy worker, ps or evaluator: waits for the chief's end, then stops
// this rank (SIGTERM, the grace, SIGKILL). Runs on its own thread while the shim waits for
// the rank.
void stopWhenCoordinatorDone(std::vector<std::string> env, std::chrono::milliseconds grace) {
  if (!waitForCoordinatorDone(env)) return;  // hvdrun is gone; Slurm or Open MPI end the step
  gStoppedForCoordinator.store(true);
  countStoppedAfterCoordinator(env, 1);
  pid_t child = gChild.load();
  ::kill(child, SIGTERM);
  // The shim clears gChild once it has reaped the rank.
  for (auto until = std::chrono::steady_clock::now() + grace; std::chrono::steady_clock::now() < until;) {
    if (gChild.load() == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (gChild.load() != 0) ::kill(child, SIGKILL);
}

// A rank that exited with an error because rank `went` left first (shut hvd down or died:
// its runtime's peer-gone report) waits here, before its report and its task's end, for
// `went` to end by itself: until `went`'s own report is in, `window` has passed, or the
// launcher tells this task to stop. srun (--kill-on-bad-exit) and mpirun stop the whole step
// as the first task ends badly, which took `went` down with their SIGTERM before it could end
// as it would have (an exception raised after hvd's atexit shutdown, a slow teardown), and
// left this peer named. hvdrun's own supervisor leaves such a rank the same 2 s.
void awaitEndOf(const std::vector<std::string>& env, int went, std::chrono::milliseconds window) {
  const auto deadline = std::chrono::steady_clock::now() + window;
  auto client = connectToHvdrun(env, window);
  if (!client) return;
  long long seen = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    sigset_t pending;
    ::sigpending(&pending);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
      if (sigismember(&pending, sig) == 1) return;
    }
    auto count = client->add(kEndReportCountKey, 0);
    if (!count) return;  // hvdrun is gone
    for (; seen < *count; ++seen) {
      auto text = client->get(endReportKey(seen + 1), std::chrono::milliseconds(200));
      auto report = text ? decodeTaskEndReport(*text) : std::nullopt;
      if (report && report->rank == went) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string recordedErrorKey(int rank) { return "launcher/recorded-error/" + std::to_string(rank); }

std::string endReportKey(long long index) { return std::string(kEndReportCountKey) + "/" + std::to_string(index); }

std::string cleanEndKey(int rank) { return "launcher/ended-cleanly/" + std::to_string(rank); }

std::string encodeTaskEndReport(const TaskEndReport& report) {
  return std::to_string(report.rank) + " " + std::to_string(report.end.exitCode) + " " +
         std::to_string(report.end.signal) + " " + (report.toldToStop ? "1" : "0") + " " +
         std::to_string(std::min<std::uint64_t>(report.oomKillsOnHost, 1 << 24));
}

// Four fields from an hvdrun before the OOM count, five since.
std::optional<TaskEndReport> decodeTaskEndReport(std::string_view text) {
  long long fields[5] = {};
  size_t at = 0;
  int n = 0;
  for (; n < 5 && at <= text.size(); ++n) {
    size_t end = text.find(' ', at);
    if (end == std::string_view::npos) end = text.size();
    if (end == at) return std::nullopt;
    auto [ptr, ec] = std::from_chars(text.data() + at, text.data() + end, fields[n]);
    if (ec != std::errc() || ptr != text.data() + end || fields[n] < 0 || fields[n] > (1 << 24)) return std::nullopt;
    at = end + 1;
  }
  if (n < 4 || at <= text.size() || fields[3] > 1) return std::nullopt;
  return TaskEndReport{static_cast<int>(fields[0]), TaskEnd{static_cast<int>(fields[1]), static_cast<int>(fields[2])},
                       fields[3] == 1, static_cast<std::uint64_t>(fields[4])};
}

std::optional<TaskEndReport> rootCauseOf(const std::vector<TaskEndReport>& inArrivalOrder) {
  const TaskEndReport* firstError = nullptr;
  for (const TaskEndReport& r : inArrivalOrder) {
    if (r.toldToStop) continue;
    if (r.end.signal != 0) return r;
    if (firstError == nullptr) firstError = &r;
  }
  if (firstError != nullptr) return *firstError;
  return std::nullopt;
}

void handOverRecordedError(const std::vector<std::string>& rankEnv, int rank, const std::string& errorFile) {
  auto recorded = readTorchErrorFile(errorFile);
  if (!recorded) return;
  if (auto client = connectToHvdrun(rankEnv, std::chrono::seconds(5))) {
    (void)client->set(recordedErrorKey(rank), encodeRecordedError(*recorded));
  }
}

void announceCoordinatorDone(const std::vector<std::string>& rankEnv) {
  if (auto client = connectToHvdrun(rankEnv, std::chrono::seconds(5))) (void)client->set(kCoordinatorDoneKey, "1");
}

bool waitForCoordinatorDone(const std::vector<std::string>& rankEnv) {
  auto client = connectToHvdrun(rankEnv, std::chrono::seconds(30));
  if (!client) return false;
  while (true) {
    auto done = client->get(kCoordinatorDoneKey, std::chrono::hours(1));
    if (done) return true;
    if (done.status().code() != Errc::kTimeout) return false;
  }
}

void reportTaskEnd(const std::vector<std::string>& rankEnv, const TaskEndReport& report) {
  auto client = connectToHvdrun(rankEnv, std::chrono::seconds(5));
  if (!client) return;
  auto index = client->add(kEndReportCountKey, 1);  // the store's count orders the reports
  if (index) (void)client->set(endReportKey(*index), encodeTaskEndReport(report));
}

std::optional<int> peerGoneOf(const std::vector<std::string>& rankEnv, int rank) {
  auto client = connectToHvdrun(rankEnv, std::chrono::seconds(2));
  if (!client) return std::nullopt;
  const std::string key = rendezvous::peerGoneKey(rank);
  auto there = client->check(key);
  if (!there || !*there) return std::nullopt;
  auto text = client->get(key, std::chrono::seconds(2));
  return text ? rendezvous::parsePeerGone(*text) : std::nullopt;
}

void countStoppedAfterCoordinator(const std::vector<std::string>& rankEnv, int ranks) {
  if (ranks <= 0) return;
  if (auto client = connectToHvdrun(rankEnv, std::chrono::seconds(5))) (void)client->add(kStoppedAfterCoordinatorKey, ranks);
}

std::vector<std::string> execRankArguments(const Options& o) {
  std::vector<std::string> args{"exec-rank"};
  if (o.gpusPerRank != 1) args.insert(args.end(), {"--gpus-per-rank", std::to_string(o.gpusPerRank)});
  if (o.noGpu) args.push_back("--no-gpu");
  if (!o.networkInterface.empty()) args.insert(args.end(), {"--network-interface", o.networkInterface});
  if (o.tfConfig) {
    args.insert(args.end(), {"--tf-config", "--tf-ps", std::to_string(o.tfPs), "--tf-port-base", std::to_string(o.tfPortBase)});
    if (o.tfChief) args.push_back("--tf-chief");
    if (o.tfEvaluator) args.push_back("--tf-evaluator");
    // How long a ps or worker gets to stop once the chief is done.
    args.insert(args.end(), {"--kill-grace", std::to_string(o.killGrace.count() / 1000.0)});
  }
  args.push_back("--");
  args.insert(args.end(), o.program.begin(), o.program.end());
  return args;
}

Result<TaskEnd> runTaskShim(const TaskShimJob& job) {
  std::vector<std::string> env = job.env;
  // torch's @record writes here on this node; a path the user gave is theirs to read.
  std::optional<TorchErrorFiles> errorFiles;
  std::string errorFile;
  if (valueInEnvironment(env, "TORCHELASTIC_ERROR_FILE").empty()) {
    errorFile = errorFiles.emplace().path(job.rank);
    if (!errorFile.empty()) env.push_back("TORCHELASTIC_ERROR_FILE=" + errorFile);
  }

  std::vector<char*> argv, envp;
  std::vector<std::string> args = job.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  // Blocked before the fork, so no signal can end the shim between the fork and the wait;
  // the rank gets the mask it came with.
  sigset_t blocked = taskSignals(), old;
  ::pthread_sigmask(SIG_BLOCK, &blocked, &old);
  int execPipe[2];
  if (::pipe2(execPipe, O_CLOEXEC) != 0) return systemError("cannot start rank " + std::to_string(job.rank), errno);
  const pid_t shim = ::getpid();
  (void)adoptOrphans();  // what the rank leaves outside its session is stopped at its end
  const std::optional<std::uint64_t> oomKillsBefore = kernelOomKills();
  pid_t child = ::fork();
  if (child < 0) return systemError("cannot start rank " + std::to_string(job.rank), errno);
  if (child == 0) {
    ::close(execPipe[0]);
    // The rank does not outlive its shim (someone SIGKILLed just the shim).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != shim) _exit(127);
    restoreIgnoredSignals();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::execve(job.executable.c_str(), argv.data(), envp.data());
    int error = errno;
    (void)!::write(execPipe[1], &error, sizeof error);
    _exit(127);
  }
  gChild.store(child);
  ::close(execPipe[1]);
  if (int error = execErrorFrom(execPipe[0]); error != 0) {
    ::waitpid(child, nullptr, 0);
    return systemError("cannot start " + job.executable + " on " + job.host, error);
  }

  const bool isCoordinator = job.coordinatorRank && *job.coordinatorRank == job.rank;
  if (job.coordinatorRank && !isCoordinator) std::thread(stopWhenCoordinatorDone, env, job.killGrace).detach();

  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  gChild.store(0);
  TaskEnd end;
  end.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  end.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  const bool clean = end.signal == 0 && end.exitCode == 0;
  if (!clean && !gStoppedForCoordinator.load()) {
    // Told or not as the rank ended, before any wait below lets the launcher's stop arrive.
    TaskEndReport report{job.rank, end, toldToStop(end)};
    if (auto after = oomKillsBefore ? kernelOomKills() : std::nullopt; after && *after > *oomKillsBefore) {
      report.oomKillsOnHost = *after - *oomKillsBefore;
    }
    if (end.signal == 0 && !report.toldToStop) {
      if (auto went = peerGoneOf(env, job.rank); went && *went != job.rank) {
        awaitEndOf(env, *went, std::min<std::chrono::milliseconds>(kOwnEndWindow, job.killGrace));
      }
    }
    reportTaskEnd(env, report);
  }
  // Said for every clean end: an elastic job's world follows it, and a peer's failure report
  // names a rank that returned early (exit 0 while the others still ran collectives).
  if (clean) {
    if (auto client = connectToHvdrun(env, std::chrono::seconds(5))) (void)client->set(cleanEndKey(job.rank), "0");
  }
  if (gStoppedForCoordinator.load()) {
    end = TaskEnd{};  // the job is done: the chief said so
  } else if (isCoordinator && clean) {
    announceCoordinatorDone(env);
  } else if (!clean && !errorFile.empty()) {
    handOverRecordedError(env, job.rank, errorFile);
  }
  // A rank that did not finish by itself may have died inside the runtime's shared-memory
  // set-up; its ring buffers (and those of the node's other ranks, ending with it) stay in
  // RAM until removed. The job is over on this node either way.
  if (!clean && !job.shmPrefix.empty()) removeShmObjects(job.shmPrefix);
  if (auto left = stopAdoptedOrphans({}, job.killGrace); !left.empty()) {
    printTo(stderr, "{}", stoppedOrphansLine(left, " on " + job.host));
  }
  return end;
}

}  // namespace hvd::cli
