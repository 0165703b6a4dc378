// cli/launch/ssh_launcher.cc: ssh command lines, the parallel host check and its report.
#include "cli/launch/ssh_launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cli/elastic/elastic_supervision.h"
#include "cli/elastic/job_growth.h"
#include "cli/launch/launcher_outcome.h"
#include "cli/os/console.h"
#include "cli/os/machine.h"
#include "cli/plan/host_gpus.h"
#include "cli/plan/shell_quote.h"
#include "cli/supervise/agent_protocol.h"
#include "cli/supervise/line_splitter.h"
#include "cli/supervise/process_supervisor.h"
#include "cli/user_error.h"
#include "runtime/common/network_interface.h"

namespace hvd::cli {
namespace {

// "[3]<stdout>:text" (or <stderr>) -> rank 3, "text"; -1 (line unchanged) for the agent's
// own words.
int agentLineRank(std::string_view& line) {
  if (line.empty() || line[0] != '[') return -1;
  size_t i = 1;
  while (i < line.size() && i < 12 && line[i] >= '0' && line[i] <= '9') ++i;
  constexpr std::string_view kOut = "]<stdout>:", kErr = "]<stderr>:";
  std::string_view rest = line.substr(i);
  if (i == 1 || (rest.substr(0, kOut.size()) != kOut && rest.substr(0, kErr.size()) != kErr)) return -1;
  int rank = std::atoi(std::string(line.substr(1, i - 1)).c_str());
  line.remove_prefix(i + kOut.size());
  return rank;
}

// The last line ssh wrote that says something ("ssh: connect to host ... refused").
std::string lastLine(const std::string& text) {
  std::string last;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) last = line;
    start = end + 1;
  }
  return last.size() > 300 ? last.substr(0, 300) + "..." : last;
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// ssh's reasons, and what to do about each.
std::string hintForSshError(const std::string& error) {
  if (contains(error, "Connection refused")) {
    return "no sshd listens on that host and port: start sshd there, or give its port with -p/--ssh-port";
  }
  if (contains(error, "Permission denied")) {
    return "ssh needs a key it can use without a password: ssh-copy-id to the host, or -i/--ssh-identity-file";
  }
  if (contains(error, "Could not resolve hostname") || contains(error, "Name or service not known")) {
    return "this machine cannot resolve that name: check -H/--hostfile, or give the host's address";
  }
  if (contains(error, "Host key verification failed") || contains(error, "REMOTE HOST IDENTIFICATION")) {
    return "ssh does not know (or no longer trusts) the host's key: log in once by hand to check and accept it";
  }
  if (contains(error, "banner exchange")) {
    return "the host took the connection but its sshd does not answer (stopped, or overloaded): try "
           "'ssh -v' to it by hand; --start-timeout waits longer";
  }
  if (contains(error, "timed out") || contains(error, "No route to host") || contains(error, "Network is unreachable")) {
    return "the host does not answer from here: is it up, and does a firewall let ssh through?";
  }
  return "run the same ssh by hand to see more (ssh -v)";
}

}  // namespace

Result<std::vector<std::string>> sshClientWords(const std::string& command) {
  if (command.empty()) return std::vector<std::string>{"ssh"};
  std::vector<std::string> words;
  size_t start = 0;
  while (start < command.size()) {
    size_t end = command.find(' ', start);
    if (end == std::string::npos) end = command.size();
    if (end > start) words.push_back(command.substr(start, end - start));
    start = end + 1;
  }
  if (words.empty()) return invalidArgument("--ssh-command '" + command + "' names no program");
  return words;
}

std::vector<std::string> sshArgv(const SshSettings& ssh, const std::string& host, const std::string& remoteCommand) {
  auto seconds = std::max<long long>(1, (ssh.connectTimeout.count() + 999) / 1000);
  std::vector<std::string> argv = ssh.client;
  argv.insert(argv.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(seconds), "-o",
                           "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-T", "-x"});
  if (ssh.port > 0) argv.insert(argv.end(), {"-p", std::to_string(ssh.port)});
  if (!ssh.identityFile.empty()) argv.insert(argv.end(), {"-i", ssh.identityFile});
  argv.insert(argv.end(), {"--", host, remoteCommand});
  return argv;
}

std::string agentCommandLine(const std::string& remoteHvdrun) {
  // exec: the agent is the session's process, so nothing stands between it and sshd.
  return "exec " + shellQuote(remoteHvdrun) + " host-agent";
}

std::optional<HostProblem> interpretHostCheck(const std::string& host, const CapturedRun& run,
                                              const std::string& remoteHvdrun, const std::string& expectedVersion,
                                              std::chrono::milliseconds timeout) {
  if (run.timedOut) {
    return HostProblem{host, fmt::format("no answer within {} s", (timeout.count() + 999) / 1000),
                       "the host or its sshd hangs (a stopped sshd, a firewall that drops packets): try "
                       "'ssh " + host + " true'; --start-timeout waits longer"};
  }
  std::string version = lastLine(run.out);
  if (run.succeeded() && version == expectedVersion) return std::nullopt;
  if (run.exitCode == 255) {
    std::string error = lastLine(run.err);
    return HostProblem{host, error.empty() ? "ssh failed (exit 255) and said nothing" : error, hintForSshError(error)};
  }
  if (run.exitCode == 126 || run.exitCode == 127) {
    return HostProblem{host, "no hvdrun at " + remoteHvdrun + " there",
                       "install hvdrun at the same path on every host, or name its path there with --remote-hvdrun"};
  }
  if (run.succeeded()) {
    return HostProblem{host, "its hvdrun is " + (version.empty() ? std::string("of unknown version") : version) +
                                 ", this one " + expectedVersion,
                       "install the same hvdrun build on every host (the agents must speak the same protocol)"};
  }
  std::string error = lastLine(run.err);
  return HostProblem{host,
                     fmt::format("{} {} there{}", remoteHvdrun,
                                 run.signaled() ? "was killed by signal " + std::to_string(run.signal)
                                                : "failed with exit code " + std::to_string(run.exitCode),
                                 error.empty() ? "" : ": " + error),
                     "run '" + remoteHvdrun + " --version' on that host to see what is wrong"};
}

std::string renderHostProblems(const std::vector<HostProblem>& problems, size_t hostCount) {
  size_t width = 4;
  for (const HostProblem& p : problems) width = std::max(width, p.host.size());
  std::string text = fmt::format("{} of {} host(s) cannot start ranks; nothing was started:\n", problems.size(), hostCount);
  text += fmt::format("  {:<{}}  PROBLEM\n", "HOST", width);
  for (const HostProblem& p : problems) {
    text += fmt::format("  {:<{}}  {}\n", p.host, width, p.problem);
    text += fmt::format("  {:<{}}    hint: {}\n", "", width, p.hint);
  }
  return text;
}

namespace {

// How long every host has to answer an ssh launch's connection (--start-timeout, or 30 s).
std::chrono::milliseconds sshCheckTimeout(const Options& o) {
  return o.startTimeout.count() > 0 ? o.startTimeout : std::chrono::milliseconds(30000);
}

GpuRule gpuRule(const Options& o) { return {o.gpusPerRank, o.oversubscribeGpus, o.tfConfig}; }

// The address ranks on other hosts reach hvdrun's rendezvous at: the --network-interface's,
// else this machine's address on the route to the first other host.
std::string rendezvousAddressForSsh(const Options& o, const Plan& plan) {
  std::string why;
  std::string address;
  if (!o.networkInterface.empty()) {
    auto found = interfaceAddress(o.networkInterface);
    if (!found) throw UserError(ExitCode::kEnvironment, "--network-interface: " + found.status().message());
    address = *found;
    why = "--network-interface " + o.networkInterface;
  } else {
    // The first other host this machine can route to; when none resolves, ssh cannot reach
    // any either, and the hosts' table will say so.
    address = plan.rendezvousAddr;
    why = "no other host's name resolves here";
    for (const HostPlan& h : plan.hosts) {
      if (h.ranks == 0 || h.local) continue;
      if (auto found = localAddressTowards(h.host)) {
        address = *found;
        why = "this machine's address on the route to " + h.host + "; --network-interface picks another";
        break;
      }
    }
  }
  if (o.verbose) printTo(stderr, "hvdrun: ranks on other hosts reach hvdrun at {} ({})\n", address, why);
  return address;
}

// Every host that did not say the right hello, in one table, as UserError: nothing started.
[[noreturn]] void throwHostProblems(const JobOutcome& outcome, const std::vector<RankProcess>& agents,
                                    const SshLaunch& launch, std::chrono::milliseconds timeout) {
  std::vector<HostProblem> problems;
  for (const AgentStartProblem& p : outcome.agentStartProblems) {
    const std::string& host = agents[p.process].host;
    CapturedRun run;
    run.timedOut = p.timedOut;
    // An agent that answered and still waits counts as a check that succeeded.
    run.exitCode = !p.ended ? 0 : p.signal == 0 ? p.exitCode : -1;
    run.signal = p.signal;
    run.out = p.version;
    run.err = p.stderrText;
    auto problem = interpretHostCheck(host, run, launch.remoteHvdrun, agentVersion(), timeout);
    problems.push_back(problem ? *problem
                               : HostProblem{host, "the connection ended before the job was sent",
                                             "run 'ssh " + host + " true' by hand to see what ends it"});
  }
  std::string table = renderHostProblems(problems, agents.size());
  if (!table.empty() && table.back() == '\n') table.pop_back();
  throw UserError(ExitCode::kEnvironment, table);
}

// Outside Slurm, with ranks on other hosts: one host agent per host, over ssh (started
// directly for this machine's own ranks). Each says hello first; the jobs go out only once
// every host has, so a host that cannot start ranks leaves nothing started elsewhere.
class SshLauncher final : public Launcher, public RankAdder {
 public:
  explicit SshLauncher(const Options& o) : o_(o) {}

  std::string_view name() const override { return "ssh"; }
  RankStarter starter() const override { return RankStarter::kHvdrun; }

  void prepare(Plan& plan, const std::string& shmPrefix) override {
    launch_ = sshLaunchFor(o_);
    shmPrefix_ = shmPrefix;
    plan.rendezvousAddr = rendezvousAddressForSsh(o_, plan);
  }

  JobOutcome start(JobStart& s) override {
    const Plan& plan = s.plan;
    plan_ = &plan;
    std::error_code ec;
    const std::string cwd = std::filesystem::current_path(ec).string();
    if (ec) throw UserError(ExitCode::kEnvironment, "cannot tell the working directory: " + ec.message());
    // One job per host with ranks, filled in one pass over the ranks.
    std::vector<AgentJob> jobs;
    std::vector<const HostPlan*> jobHosts;
    std::map<std::string, size_t> jobOf;
    for (const HostPlan& h : plan.hosts) {
      if (h.ranks == 0) continue;
      jobOf[h.host] = jobs.size();
      jobs.push_back({agentVersion(), h.host, cwd, shmPrefix_, o_.killGrace, o_.maxLineBytes,
                      parameterServerChief(plan), plan.bindTo, std::nullopt,
                      agentSharesOutGpus(o_.noGpu, h) ? std::optional<GpuRule>(gpuRule(o_)) : std::nullopt, {}});
      jobHosts.push_back(&h);
    }
    const std::vector<std::string> base = remoteEnvironment(processEnvironment());
    for (const RankPlan& r : plan.ranks) {
      // The secret travels in the job, over ssh's stdin: never on a command line.
      AgentJob& job = jobs[jobOf.at(r.where.host)];
      RankEnvironment planned = sshRankEnvironment(o_, plan, r, s.job, job.gpus.has_value());
      // The agent sets the host's GPUs, never from hvdrun's own list.
      std::vector<std::string> inherited = job.gpus ? withoutGpuVariables(base) : base;
      job.ranks.push_back({r.where.rank, o_.program, std::move(inherited), std::move(planned), usesGpu(r.role)});
      if (o_.stdinRank == r.where.rank) job.stdinRank = r.where.rank;
    }
    std::vector<RankProcess> agents;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const HostPlan& h = *jobHosts[i];
      const AgentJob& job = jobs[i];
      std::vector<int> ranks;
      for (const AgentRank& r : job.ranks) ranks.push_back(r.rank);
      agents.push_back(agentProcess(h.host, h.local, std::move(ranks), encodeAgentJob(job)));
    }
    SupervisorOptions supervision = s.supervision();
    supervision.processes = SupervisorOptions::Processes::kHostAgents;
    supervision.lineReader = [](const RankProcess&, bool, size_t maxLine) { return hostAgentLineReader(maxLine); };
    supervision.agentVersion = agentVersion();
    supervision.agentHelloTimeout = launch_.ssh.connectTimeout;
    // hvdrun's stdin goes to its rank over that rank's agent connection, as mpirun's does.
    if (o_.stdinRank) supervision.stdinForwarding = SupervisorOptions::StdinForwarding{STDIN_FILENO, *o_.stdinRank};
    supervision.agentSilenceLimit = kAgentSilenceLimit;
    supervision.killFrozenAgent = [this](const RankProcess& agent, long pidThere) { killAgentThere(agent, pidThere); };
    ElasticSupervision elastic;
    elastic.start(o_, plan, s.job, &s.server, supervision, this);
    JobOutcome result = valueOrThrow(superviseRanks(agents, supervision));
    if (!result.agentStartProblems.empty()) throwHostProblems(result, agents, launch_, launch_.ssh.connectTimeout);
    // The supervisor counted agents; the summary counts ranks.
    if (result.interruptSignal != 0 || result.ranksStoppedAfterPreemption > 0) {
      result.ranksStopped = static_cast<int>(plan.ranks.size());
    } else if (result.firstFailure) {
      result.ranksStopped = static_cast<int>(plan.ranks.size()) - 1;
    }
    adoptCoordinatorEnd(result, &s.server);
    return result;
  }

  // RankAdder: ranks an elastic job adds come through a new host agent each, also here.
  bool overSsh() const override { return true; }
  RankProcess forkHere(const std::string& host, AddedRank rank, std::vector<int>) override {
    return startAgent(host, true, {std::move(rank)});
  }
  RankProcess startAgent(const std::string& host, bool here, std::vector<AddedRank> ranks) override {
    std::error_code ec;
    AgentJob job{agentVersion(), host, std::filesystem::current_path(ec).string(), shmPrefix_, o_.killGrace,
                 o_.maxLineBytes, std::nullopt, BindTo::kNone, std::nullopt, std::nullopt, {}};
    std::vector<int> workers;
    for (AddedRank& r : ranks) {
      std::vector<std::string> inherited = remoteEnvironment(processEnvironment());
      // Not hvdrun's own CUDA_VISIBLE_DEVICES, a list of this machine's devices (a login
      // node's, a Slurm step's): the rank sees its host's.
      if (!o_.noGpu && !here) {
        inherited = withoutGpuVariables(std::move(inherited));
        r.env.set(RankEnvironment::Part::kGpus, withoutGpuVariables(r.env.part(RankEnvironment::Part::kGpus)));
      }
      job.ranks.push_back({r.worker, o_.program, std::move(inherited), std::move(r.env), true, r.gpuPositions, r.cpuBlock});
      // The agent pins ranks with a block to it, and the others of this job not at all.
      if (r.cpuBlock) job.bindTo = plan_->bindTo;
      workers.push_back(r.worker);
    }
    return agentProcess(host, here, std::move(workers), encodeAgentJob(job));
  }

 private:
  // An agent that stopped answering (frozen) is killed where it runs: its guardian then stops
  // its ranks and cleans its host. The agent on this machine directly; another host's over a
  // connection of its own, started and left to end (hvdrun's loop reaps it), so an
  // unreachable host holds nothing up.
  void killAgentThere(const RankProcess& agent, long pidThere) const {
    if (agent.executable != launch_.client) {
      ::kill(static_cast<pid_t>(pidThere), SIGKILL);
      return;
    }
    std::vector<std::string> argv = sshArgv(launch_.ssh, agent.host, "kill -KILL " + std::to_string(pidThere));
    (void)startDetached(argv);
  }

  RankProcess agentProcess(const std::string& host, bool here, std::vector<int> ranks, std::string job) const {
    RankProcess agent;
    agent.rank = ranks.front();
    agent.host = host;
    agent.agentRanks = std::move(ranks);
    if (here) {
      agent.executable = thisExecutable();
      agent.argv = {agent.executable, "host-agent"};
    } else {
      agent.executable = launch_.client;
      agent.argv = sshArgv(launch_.ssh, host, agentCommandLine(launch_.remoteHvdrun));
    }
    agent.env = processEnvironment();
    agent.agentInput = std::move(job);
    return agent;
  }

  const Options& o_;
  SshLaunch launch_;
  std::string shmPrefix_;
  const Plan* plan_ = nullptr;  // the start's, while it runs
};

}  // namespace

std::unique_ptr<Launcher> makeSshLauncher(const Options& options) { return std::make_unique<SshLauncher>(options); }

// A prompt left open would run into a failure record: an agent passes whole lines only.
std::unique_ptr<LineReader> hostAgentLineReader(size_t maxLine) {
  return labelledLineReader(agentLineRank, maxLine, /*splitAtCarriageReturn=*/true);
}

RankEnvironment sshRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                   bool agentSharesGpus) {
  RankEnvironment env = RankEnvironment::fromPlan(plan, rank);
  env.job(job);
  if (auto elastic = elasticVariables(o, rank.where.rank)) env.elastic(*elastic);
  if (agentSharesGpus) env.set(RankEnvironment::Part::kGpus, {});
  return env;
}

bool ranksElsewhere(const Plan& plan) {
  return std::any_of(plan.hosts.begin(), plan.hosts.end(), [](const HostPlan& h) { return h.ranks > 0 && !h.local; });
}

SshLaunch sshLaunchFor(const Options& o) {
  SshLaunch launch;
  auto words = sshClientWords(o.sshCommand);
  if (!words) throw UserError(ExitCode::kUsage, words.status().message(), "e.g. --ssh-command 'ssh -F ~/.ssh/cluster'");
  launch.ssh.client = *words;
  launch.ssh.port = o.sshPort;
  launch.ssh.identityFile = o.sshIdentityFile;
  launch.ssh.connectTimeout = sshCheckTimeout(o);
  auto client = findExecutable(launch.ssh.client.front(), searchPath());
  if (!client) {
    throw UserError(ExitCode::kEnvironment, "the plan puts ranks on other hosts, which hvdrun reaches with ssh: " +
                                                client.status().message(),
                    "install an OpenSSH client, or name yours with --ssh-command");
  }
  launch.client = *client;
  launch.remoteHvdrun = o.remoteHvdrun.empty() ? thisExecutable() : o.remoteHvdrun;
  return launch;
}

std::vector<std::string> remoteEnvironment(const std::vector<std::string>& env) {
  static const char* const kThisMachineOnly[] = {"HOSTNAME", "PWD",        "OLDPWD",  "SHLVL",   "_",
                                                 "DISPLAY",  "XAUTHORITY", "TMUX",    "TMUX_PANE", "TERMCAP",
                                                 "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK",
                                                 "SSH_AGENT_PID", "SSH_ORIGINAL_COMMAND", "HVDRUN_SSH_COMMAND"};
  std::vector<std::string> out;
  for (const std::string& kv : env) {
    std::string name = kv.substr(0, kv.find('='));
    bool drop = name.rfind("BASH_FUNC_", 0) == 0 ||
                std::any_of(std::begin(kThisMachineOnly), std::end(kThisMachineOnly),
                            [&](const char* n) { return name == n; });
    if (!drop) out.push_back(kv);
  }
  return out;
}

}  // namespace hvd::cli
