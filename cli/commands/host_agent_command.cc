// cli/commands/host_agent_command.cc: one host's share of an ssh launch.
#include "cli/commands/host_agent_command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cli/supervise/agent_protocol.h"
#include "cli/supervise/guardian.h"
#include "cli/elastic/rank_timeout.h"
#include "cli/supervise/process_supervisor.h"
#include "cli/launch/task_shim.h"
#include "cli/launch/torch_error_file.h"
#include "cli/os/adopted_orphans.h"
#include "cli/os/console.h"
#include "cli/os/cpu_topology.h"
#include "cli/os/machine.h"
#include "cli/os/oom_kills.h"
#include "cli/os/subprocess.h"
#include "cli/plan/cpu_binding.h"
#include "cli/plan/host_gpus.h"
#include "cli/plan/plan.h"
#include "cli/plan/thread_defaults.h"
#include "cli/user_error.h"
#include "runtime/backends/backend_probe.h"
#include "runtime/common/cpu_budget.h"
#include "runtime/common/rank_contract.h"
#include "runtime/common/shm_names.h"
#include "slurm/gpu_binding.h"

namespace hvd::cli {
namespace {

// Set by the thread that learns the chief's end (a PS job whose chief runs on another host).
std::atomic<bool> gStoppedForCoordinator{false};

// Ranks hvdrun ordered stopped ("stop <rank>": the discovery script gave this host fewer
// slots), from the orders thread to the supervisor's, which asks for them every
// kStopOrdersEvery (SupervisorOptions::changeRanks). File-wide: the orders thread is
// detached and may outlive runHostAgentCommand's frame.
std::mutex gStopOrdersMutex;
std::vector<int> gStopOrders;
constexpr std::chrono::milliseconds kStopOrdersEvery{100};

[[noreturn]] void fail(const std::string& host, const std::string& what, const std::string& hint = "") {
  throw UserError(ExitCode::kEnvironment, "on " + host + ": " + what, hint);
}

// Reads exactly n bytes (fewer only at EOF).
std::string readBytes(int fd, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, out.data() + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

// The header line, read a byte at a time so nothing after it is consumed.
std::string readLine(int fd, size_t limit) {
  std::string line;
  char c = 0;
  while (line.size() < limit) {
    ssize_t r = ::read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || c == '\n') break;
    line += c;
  }
  return line;
}

AgentJob receiveJob(int fd) {
  std::string header = readLine(fd, 64);
  auto length = agentJobLength(header);
  if (!length) throw UserError(ExitCode::kUsage, length.status().message(), length.status().hint());
  std::string payload = readBytes(fd, *length);
  if (payload.size() != *length) {
    throw UserError(ExitCode::kEnvironment, "the connection to hvdrun ended before the job had arrived");
  }
  auto job = decodeAgentJob(payload);
  if (!job) throw UserError(ExitCode::kUsage, job.status().message());
  return std::move(*job);
}

// hvdrun's orders while the ranks run: a signal line raises that signal here, where the
// supervisor's signalfd passes it to every rank exactly as hvdrun would to local ones.
// Forwarded stdin goes into `relay` (-1: no rank here reads it), which the supervisor
// drains into its rank's stdin; hvdrun's window keeps it from filling for long. A stop
// order queues its rank for the supervisor (gStopOrders). EOF (or a broken stream) means
// hvdrun or the connection is gone: this process ends at once, and the guardian stops
// every rank's session and removes the job's /dev/shm objects.
void followOrders(int fd, int relay) {
  AgentOrderReader reader;
  char buf[65536];
  bool held = false;  // hvdrun's Ctrl-Z: it sends nothing until its SIGCONT
  while (true) {
    // hvdrun's heartbeat comes every second: silence this long is a connection that broke
    // without an end this host can see (a partition), handled as its end.
    pollfd in{fd, POLLIN, 0};
    const int ready = ::poll(&in, 1, held ? -1 : static_cast<int>(kHvdrunSilenceLimit.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) ::kill(::getpid(), SIGKILL);
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::kill(::getpid(), SIGKILL);
    for (const AgentOrder& order : reader.feed(std::string_view(buf, static_cast<size_t>(n)))) {
      switch (order.kind) {
        case AgentOrder::Kind::kSignal:
          if (order.signal == SIGTSTP) held = true;
          if (order.signal == SIGCONT) held = false;
          ::kill(::getpid(), order.signal);
          break;
        case AgentOrder::Kind::kInput:
          // A failed write (the supervisor is done with the input) drops it.
          for (size_t at = 0; relay >= 0 && at < order.input.size();) {
            ssize_t w = ::write(relay, order.input.data() + at, order.input.size() - at);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            at += static_cast<size_t>(w);
          }
          break;
        case AgentOrder::Kind::kInputEnd:
          if (relay >= 0) ::close(relay);
          relay = -1;
          break;
        case AgentOrder::Kind::kStopRank: {
          std::lock_guard<std::mutex> lock(gStopOrdersMutex);
          gStopOrders.push_back(order.rank);
          break;
        }
        case AgentOrder::Kind::kBroken:
          ::kill(::getpid(), SIGKILL);
          break;
      }
    }
  }
}

// This host's GPUs, found as hvdrun finds its own machine's (an inherited CUDA_VISIBLE_DEVICES,
// else the driver's count).
std::vector<std::string> hostDevices(const std::string& host) {
  std::vector<std::string> devices;
  const std::string visibleName(rank_contract::kCudaVisibleDevices);
  if (const char* visible = std::getenv(visibleName.c_str()); visible != nullptr) {
    auto list = slurm::parseDeviceList(visible, visibleName);
    if (!list) fail(host, list.status().message(), list.status().hint());
    devices = std::move(*list);
  } else {
    for (int i = 0, n = backends::countLocalGpus(); i < n; ++i) devices.push_back(std::to_string(i));
  }
  return devices;
}

// This host's GPUs given to the job's ranks by the plan's rule (host_gpus.h): each rank's
// CUDA_VISIBLE_DEVICES and HVD_LOCAL_GPU replace any it came with. No devices: the ranks get
// no list.
void shareOutGpus(AgentJob& job) {
  HostPlan host;
  host.host = job.host;
  host.devices = hostDevices(job.host);
  std::vector<RankPlan> plans(job.ranks.size());
  std::vector<RankPlan*> order;
  for (size_t i = 0; i < plans.size(); ++i) {
    plans[i].role = job.ranks[i].usesGpu ? Role::kWorker : Role::kPs;
    order.push_back(&plans[i]);
  }
  if (Status s = assignHostGpus(*job.gpus, host, order); !s.isOk()) {
    throw UserError(ExitCode::kEnvironment, s.message(), s.hint());  // it names the host
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    job.ranks[i].env = withoutGpuVariables(std::move(job.ranks[i].env));
    job.ranks[i].planned.set(RankEnvironment::Part::kGpus, gpuVariables(plans[i]));
  }
}

// Ranks an elastic job added here: the devices at the positions hvdrun chose (agent_protocol.h
// GpuPositions). A host with fewer devices than a position needs: that rank gets none of its
// own and sees the host's, as a rank added where every GPU is held does on hvdrun's machine.
void placeAddedRanksGpus(AgentJob& job) {
  std::optional<std::vector<std::string>> devices;
  for (AgentRank& r : job.ranks) {
    if (!r.gpuPositions) continue;
    if (!devices) devices = hostDevices(job.host);
    if (devices->empty()) continue;  // no GPUs here: no list, as for the job's first ranks
    r.env = withoutGpuVariables(std::move(r.env));
    r.planned.set(RankEnvironment::Part::kGpus, {});
    const GpuPositions& p = *r.gpuPositions;
    const int highest = *std::max_element(p.visible.begin(), p.visible.end());
    if (highest >= static_cast<int>(devices->size())) {
      printTo(stderr, "hvdrun: warning: {} offers {} GPU(s), fewer than rank {} added there needs beside the ranks "
                      "running there: it gets none of its own (it sees the host's)\n",
              job.host, devices->size(), r.rank);
      continue;
    }
    std::string visible;
    for (int position : p.visible) visible += (visible.empty() ? "" : ",") + (*devices)[static_cast<size_t>(position)];
    r.planned.set(RankEnvironment::Part::kGpus,
                  {rank_contract::assignment(rank_contract::kCudaVisibleDevices, visible),
                   rank_contract::assignment(rank_contract::kLocalGpu, std::to_string(p.localGpu))});
  }
}

}  // namespace

std::vector<std::string> completeAgentRank(AgentRank& r, int threads, int rankCpus, const std::string& errorFile) {
  auto userSet = [&](const std::string& name) {
    return !valueInEnvironment(r.env, name).empty() || !r.planned.valueOf(name).value_or("").empty();
  };
  std::vector<std::string> threadVars = threadVariables(threads, userSet);
  if (auto var = interOpThreadsVariable(rankCpus, userSet)) threadVars.push_back(std::move(*var));
  r.planned.threads(std::move(threadVars));
  if (!errorFile.empty() && !userSet(std::string(rank_contract::kTorchErrorFile))) r.planned.errorFile(errorFile);
  return r.planned.over(r.env);
}

int runHostAgentCommand(const std::vector<std::string>& args) {
  // hvdrun's count of this host for --nproc-per-node gpu, cpu or auto, before it plans: the
  // devices ranks here would get, and the CPUs this login may use (affinity, cgroup quota).
  if (args == std::vector<std::string>{"--count"}) {
    printTo(stdout, "{}{}", agentHelloLine(),
            agentCountsLine({static_cast<int>(hostDevices(hostName()).size()), usableCpuCount()}));
    return 0;
  }
  if (!args.empty()) {
    throw UserError(ExitCode::kUsage, "host-agent: unexpected argument '" + args[0] + "'",
                    "host-agent is started by hvdrun over ssh, not by hand");
  }
  // hvdrun's check of this host: the job comes only once every host has answered.
  printTo(stdout, "{}", agentHelloLine());
  std::fflush(stdout);
  AgentJob job = receiveJob(STDIN_FILENO);
  if (job.version != agentVersion()) {
    fail(job.host, "this host's hvdrun is " + agentVersion() + ", the launching one " + job.version,
         "install the same hvdrun on every host, or name it with --remote-hvdrun");
  }
  // The orders keep coming on stdin; the ranks must not read (and eat) them.
  int orders = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (orders < 0 || devNull < 0 || ::dup2(devNull, STDIN_FILENO) < 0) fail(job.host, "cannot set up stdin");
  ::close(devNull);
  if (::chdir(job.workingDirectory.c_str()) != 0) {
    fail(job.host, "cannot enter the working directory " + job.workingDirectory + ": " + std::strerror(errno),
         "ranks start in hvdrun's working directory, which must exist on every host (a shared file system)");
  }

  // torch's @record writes each rank's exception into this host's directory; a path the
  // user gave is theirs to read.
  TorchErrorFiles errorFiles;
  std::map<int, std::string> errorFileOf;

  // --bind-to: this host's cores split among its ranks, as hvdrun splits its own host's;
  // refused, like a missing program, before any rank here starts. Ranks an elastic job adds
  // come with their block of the split the plan made here (elastic_cpus.h).
  std::vector<std::vector<int>> cpus(job.ranks.size());
  if (job.bindTo != BindTo::kNone) {
    auto usable = usableCpuTopology();
    if (!usable) fail(job.host, "--bind-to: " + usable.status().message());
    const bool added = std::any_of(job.ranks.begin(), job.ranks.end(), [](const AgentRank& r) { return r.cpuBlock; });
    if (!added) {
      auto bindings = cpuBindings(job.bindTo, static_cast<int>(job.ranks.size()), *usable);
      if (!bindings) fail(job.host, bindings.status().message(), bindings.status().hint());
      cpus = std::move(*bindings);
    }
    for (size_t i = 0; added && i < job.ranks.size(); ++i) {
      const std::optional<CpuBlock>& block = job.ranks[i].cpuBlock;
      if (!block) continue;  // none was free: it runs unpinned, as hvdrun said
      auto bindings = cpuBindings(job.bindTo, block->of, *usable);
      if (!bindings) {
        // Already running ranks are not to be failed for it: this one runs unpinned.
        printTo(stderr, "hvdrun: warning: rank {} added on {} runs unpinned: {}\n", job.ranks[i].rank, job.host,
                bindings.status().message());
        continue;
      }
      cpus[i] = (*bindings)[static_cast<size_t>(block->index)];
    }
  }

  // A host hvdrun could not look at: its GPUs shared out here (before any rank starts, so a
  // host with too few is named and nothing is left half-started).
  if (job.gpus) shareOutGpus(job);
  placeAddedRanksGpus(job);

  // Every program is found before any rank starts: nothing half-started to clean up.
  const int threads = defaultThreadsPerRank(usableCpuCount(), static_cast<int>(job.ranks.size()), std::nullopt);
  const int ownCpus = static_cast<int>(affinityCpus().size());  // an unpinned rank's, inherited
  std::vector<RankProcess> ranks;
  for (AgentRank& r : job.ranks) {
    auto exe = findExecutable(r.argv.front(), valueInEnvironment(r.planned.over(r.env), "PATH"));
    if (!exe) {
      fail(job.host, "cannot run the program for rank " + std::to_string(r.rank) + ": " + exe.status().message(),
           "nothing was started; the program must exist at the same path (or in PATH) on every host");
    }
    const auto& pinned = cpus[ranks.size()];
    std::vector<std::string> env = completeAgentRank(r, threads, pinned.empty() ? ownCpus : static_cast<int>(pinned.size()),
                                                     errorFiles.path(r.rank));
    if (auto file = r.planned.valueOf(rank_contract::kTorchErrorFile); file && *file == errorFiles.path(r.rank)) {
      errorFileOf[r.rank] = *file;
    }
    ranks.push_back({.rank = r.rank, .host = job.host, .executable = *exe, .argv = r.argv, .env = std::move(env), .cpus = pinned});
  }

  // Forked before the orders thread: the guardian must be a clean single-threaded copy.
  Guardian guardian = [&] {
    auto g = Guardian::start(job.shmPrefix);
    if (!g) fail(job.host, g.status().message());
    return std::move(*g);
  }();
  guardian.removeIfOrphaned(errorFiles.directory());  // a SIGKILLed agent leaves nothing in /tmp
  // The threads are born with every signal blocked, so what they raise waits for the
  // supervisor's signalfd instead of killing the agent.
  const std::vector<std::string>& rankEnv = ranks.front().env;  // names hvdrun's rendezvous
  const bool chiefHere = job.coordinatorRank && std::any_of(job.ranks.begin(), job.ranks.end(), [&](const AgentRank& r) {
                           return r.rank == *job.coordinatorRank;
                         });
  // --stdin names a rank here: hvdrun's stdin comes over the connection, through a relay.
  int relay[2] = {-1, -1};
  const bool stdinHere = job.stdinRank && std::any_of(job.ranks.begin(), job.ranks.end(), [&](const AgentRank& r) {
                           return r.rank == *job.stdinRank;
                         });
  if (stdinHere && ::pipe2(relay, O_CLOEXEC) != 0) fail(job.host, "cannot make a pipe for the forwarded stdin");
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  std::thread(followOrders, orders, relay[1]).detach();
  // A ParameterServerStrategy job whose chief runs elsewhere: when it is done, so is this host.
  if (job.coordinatorRank && !chiefHere) {
    // By value and a flag of the file's: the thread may wake after this function returned.
    std::thread([env = rankEnv] {
      if (!waitForCoordinatorDone(env)) return;
      gStoppedForCoordinator.store(true);
      ::kill(::getpid(), SIGTERM);  // the supervisor stops every rank here, as on hvdrun's order
    }).detach();
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);

  // Where hvdrun can kill this agent should it stop answering, and, while the ranks run,
  // that it still answers (agent_protocol.h).
  printTo(stderr, "{}\n", formatAgentPid(static_cast<long>(::getpid())));
  SupervisorOptions supervision;
  supervision.heartbeatLine = std::string(kAgentAlive);
  supervision.heartbeatEvery = kAgentHeartbeatEvery;
  supervision.prefixOutput = true;  // hvdrun reads the rank from the prefix
  supervision.showOpenLines = false;  // a prompt left open would run into a failure record
  supervision.rankCount = static_cast<int>(ranks.size());
  supervision.killGrace = job.killGrace;
  supervision.maxLineBytes = static_cast<size_t>(job.maxLineBytes);
  supervision.onRankStarted = [&guardian](int pid) { guardian.watch(pid); };
  // hvdrun's Ctrl-Z arrives as "signal SIGTSTP", its fg as "signal SIGCONT": the agent holds
  // its ranks meanwhile and goes on reading the connection.
  supervision.onStop = SupervisorOptions::OnStop::kRanks;
  if (stdinHere) supervision.stdinForwarding = SupervisorOptions::StdinForwarding{relay[0], *job.stdinRank};
  // A rank here that failed because another went (a SIGTERM handler that shut hvd down):
  // one here is left to end by itself, as hvdrun leaves its own ranks (supervisor.h).
  supervision.peerGoneOf = [&rankEnv](int rank) { return peerGoneOf(rankEnv, rank); };
  const std::optional<std::uint64_t> oomKillsBefore = kernelOomKills();
  supervision.onFailure = [&](const RankFailure& failure) {
    RankFailure f = failure;
    if (auto now = oomKillsBefore ? kernelOomKills() : std::nullopt; now && *now > *oomKillsBefore) {
      f.oomKillsOnHost = *now - *oomKillsBefore;
    }
    // Before the record: hvdrun reads the exception once the failure is reported.
    if (auto file = errorFileOf.find(f.rank); file != errorFileOf.end()) handOverRecordedError(rankEnv, f.rank, file->second);
    printTo(stderr, "{}\n", formatAgentFailure(f));
  };
  // A rank that exits 0 by itself is said, so that a peer failing for want of it is reported
  // as such (a rank that returned early); in an elastic job rankEnded says it.
  supervision.onCleanEnd = [](int rank) { printTo(stderr, "{}\n", formatAgentRankEnd(rank)); };
  // An elastic job (hvdrun --min-np): hvdrun decides whether the job goes on without a rank,
  // so every end is reported and nothing here is stopped for it; if the job cannot go on,
  // hvdrun stops this agent as it stops any.
  if (const std::string worker = valueInEnvironment(rankEnv, std::string(rank_contract::kElasticWorker)); !worker.empty() && worker != "-1") {
    supervision.onCleanEnd = nullptr;
    supervision.rankEnded = [&supervision](const std::vector<int>& ranks, const RankFailure* failure) {
      for (int rank : ranks) {  // the agent's own ranks end one by one
        if (failure != nullptr) {
          RankFailure f = *failure;
          f.rank = rank;
          supervision.onFailure(f);
        } else {
          printTo(stderr, "{}\n", formatAgentRankEnd(rank));
        }
      }
      return SupervisorOptions::AfterRankEnd{.goesOn = true};
    };
    // hvdrun's orders to stop ranks here that the job no longer needs (their ends are
    // nothing: not reported, not failures).
    supervision.changeRanks = [] {
      SupervisorOptions::RankChanges changes;
      std::lock_guard<std::mutex> lock(gStopOrdersMutex);
      changes.stop.swap(gStopOrders);
      return changes;
    };
    supervision.changeRanksEvery = kStopOrdersEvery;
    // A rank frozen as long as its peers wait in a collective fails here, as under hvdrun.
    const std::string timeout = valueInEnvironment(rankEnv, std::string(rank_contract::kTimeout));
    supervision.frozenFails =
        rankTimeout([&timeout](const char*) -> const char* { return timeout.empty() ? nullptr : timeout.c_str(); });
  }
  if (chiefHere) {
    supervision.coordinatorRank = job.coordinatorRank;
    supervision.onCoordinatorDone = [&rankEnv] { announceCoordinatorDone(rankEnv); };
  }
  (void)adoptOrphans();  // best effort: without it a daemon outlives the job
  auto outcome = superviseRanks(ranks, supervision);
  if (auto left = stopAdoptedOrphans({guardian.pid()}, job.killGrace); !left.empty()) {
    printTo(stderr, "{}", stoppedOrphansLine(left, " on " + job.host));
  }
  guardian.release();
  removeShmObjects(job.shmPrefix);
  if (!outcome) fail(job.host, outcome.status().message());
  if (chiefHere) countStoppedAfterCoordinator(rankEnv, outcome->ranksStoppedAfterCoordinator);
  if (gStoppedForCoordinator.load() && !outcome->firstFailure) {
    countStoppedAfterCoordinator(rankEnv, outcome->ranksStopped);
    return 0;  // the job is done: its chief said so
  }
  return outcome->exitCode;
}

}  // namespace hvd::cli
