// cli/launch/task_shim.cc: exec-rank as its rank's parent (task_shim.h).
#include "cli/launch/task_shim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "cli/supervise/rank_failure.h"
#include "cli/launch/torch_error_file.h"
#include "cli/os/adopted_orphans.h"
#include "cli/os/console.h"
#include "cli/os/inherited_signals.h"
#include "cli/os/oom_kills.h"
#include "cli/os/subprocess.h"
#include "cli/plan/plan_output.h"
#include "runtime/common/rank_contract.h"
#include "runtime/common/shm_names.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {
namespace {

using rank_contract::assignment;

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
  std::string addr = valueInEnvironment(env, std::string(rank_contract::kRendezvousAddr)),
              port = valueInEnvironment(env, std::string(rank_contract::kRendezvousPort)),
              secret = valueInEnvironment(env, std::string(rank_contract::kSecretKey));
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

std::vector<std::string> shimPlanVariables(const Plan& plan, const Options& o) {
  std::vector<std::string> vars{assignment(rank_contract::kPlanHosts, planHostsSpec(plan))};
  if (std::string gpus = planGpusSpec(plan); !gpus.empty()) vars.push_back(assignment(rank_contract::kPlanGpus, gpus));
  std::string names;
  for (const std::string& kv : o.runtimeVariables) names += (names.empty() ? "" : ",") + kv.substr(0, kv.find('='));
  if (!names.empty()) vars.push_back(assignment(rank_contract::kPlanRuntimeVariables, names));
  return vars;
}

std::vector<std::string> shimJobVariables(const Options& o, const Plan& plan, const JobVariables& job) {
  std::vector<std::string> vars{assignment(rank_contract::kMasterPort, std::to_string(plan.masterPort)),
                                assignment(rank_contract::kRendezvousAddr, plan.rendezvousAddr),
                                assignment(rank_contract::kRendezvousPort, std::to_string(plan.rendezvousPort)),
                                assignment(rank_contract::kSecretKey, job.secret),
                                assignment(rank_contract::kPreemptFile, job.preemptFile),
                                assignment(rank_contract::kPreemptSignal, job.preemptSignal)};
  // The shims rebuild the plan on each node without the engine options or hvdrun's
  // restarts: the ranks there inherit these instead.
  vars.insert(vars.end(), o.runtimeVariables.begin(), o.runtimeVariables.end());
  if (o.minNp > 0) vars.push_back(assignment(rank_contract::kPlanElastic, "1"));  // each rank's worker number follows
  if (o.elasticTimeout > 0) vars.push_back(assignment(rank_contract::kElasticTimeout, std::to_string(o.elasticTimeout)));
  vars.push_back(assignment(rank_contract::kTorchRestartCount, std::to_string(plan.restartCount)));
  vars.push_back(assignment(rank_contract::kTorchMaxRestarts, std::to_string(plan.maxRestarts)));
  return vars;
}

RankEnvironment shimRankEnvironment(const Plan& plan, const RankPlan& me, const slurm::Environment& task,
                                    bool keepSlurmGpus, std::vector<std::string> threads,
                                    std::vector<std::string>& inherited) {
  namespace c = rank_contract;
  auto value = [&task](std::string_view name) -> std::optional<std::string> {
    auto it = task.find(std::string(name));
    if (it == task.end()) return std::nullopt;
    return it->second;
  };
  RankEnvironment env = RankEnvironment::fromPlan(plan, me);
  // Variables the launcher decided once for the whole job; the shim passes them on as they
  // are instead of deciding again on every node (a free port here is not one there).
  // hvdrun's own start of the job (--max-restarts) is known only to hvdrun.
  for (std::string_view name : {c::kMasterPort, c::kRendezvousAddr, c::kRendezvousPort, c::kTorchRestartCount,
                                c::kTorchMaxRestarts}) {
    if (auto v = value(name)) env.replaceValue(name, *v);
  }
  // srun tells each task the address its launching machine used: the one address of
  // hvdrun's host that this node is sure to reach.
  if (auto launchIp = value("SLURM_LAUNCH_NODE_IPADDR"); launchIp && !launchIp->empty()) {
    env.replaceValue(c::kRendezvousAddr, *launchIp);
  }
  // Slurm's per-task binding stands for the ranks the plan gives GPUs: the task sees its own
  // GPUs alone, its first at 0.
  if (keepSlurmGpus) {
    std::vector<std::string> gpus;
    if (auto visible = value(c::kCudaVisibleDevices)) gpus.push_back(c::assignment(c::kCudaVisibleDevices, *visible));
    gpus.push_back(c::assignment(c::kLocalGpu, "0"));
    env.set(RankEnvironment::Part::kGpus, std::move(gpus));
  }
  // The runtime variables hvdrun gives every rank, which its plan here was made without.
  if (auto names = value(c::kPlanRuntimeVariables)) {
    std::vector<std::string> settings = env.part(RankEnvironment::Part::kPlanSettings);
    for (size_t at = 0; at <= names->size();) {
      size_t end = names->find(',', at);
      if (end == std::string::npos) end = names->size();
      const std::string name = names->substr(at, end - at);
      if (auto v = value(name); v && !name.empty()) settings.push_back(c::assignment(name, *v));
      at = end + 1;
    }
    env.set(RankEnvironment::Part::kPlanSettings, std::move(settings));
  }
  if (auto secret = value(c::kSecretKey)) {
    env.job({*secret, value(c::kPreemptFile).value_or(""), value(c::kPreemptSignal).value_or("")});
  }
  // hvdrun --min-np: the rank's worker number (its first rank) joins it to each world.
  if (value(c::kPlanElastic) == "1") {
    int timeout = 0;
    if (auto t = value(c::kElasticTimeout)) timeout = std::atoi(t->c_str());
    env.elastic({me.where.rank, timeout, std::nullopt});
  }
  env.threads(std::move(threads));
  inherited.clear();
  for (const auto& [name, v] : task) {
    if (name == c::kPlanHosts || name == c::kPlanGpus || name == c::kPlanRuntimeVariables) continue;
    inherited.push_back(name + "=" + v);
  }
  return env;
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
  RankEnvironment planned = job.env;
  // torch's @record writes here on this node; a path the user gave is theirs to read.
  std::optional<TorchErrorFiles> errorFiles;
  std::string errorFile;
  if (valueInEnvironment(job.inherited, std::string(rank_contract::kTorchErrorFile)).empty() &&
      !planned.valueOf(rank_contract::kTorchErrorFile)) {
    errorFile = errorFiles.emplace().path(job.rank);
    planned.errorFile(errorFile);
  }
  std::vector<std::string> env = planned.over(job.inherited);

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
