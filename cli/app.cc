// cli/app.cc: dispatch from parsed options to --version, --check-build or a launch.
#include "cli/os/console.h"
#include "cli/app.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "cli/build_info.h"
#include "cli/check_build.h"
#include "cli/commands/exec_rank_command.h"
#include "cli/commands/host_agent_command.h"
#include "cli/commands/hostlist_command.h"
#include "cli/commands/sbatch_command.h"
#include "cli/commands/timeline_command.h"
#include "cli/config/settings_sources.h"
#include "cli/elastic_options.h"
#include "cli/launch/elastic_cpus.h"
#include "cli/launch/elastic_gpus.h"
#include "cli/launch/elastic_world.h"
#include "cli/launch/guardian.h"
#include "cli/launch/host_discovery.h"
#include "cli/launch/mpirun_launcher.h"
#include "cli/launch/rank_timeout.h"
#include "cli/launch/slurm_job_query.h"
#include "cli/launch/agent_protocol.h"
#include "cli/launch/srun_launcher.h"
#include "cli/launch/ssh_host_counts.h"
#include "cli/launch/ssh_launcher.h"
#include "cli/launch/task_shim.h"
#include "cli/launch/supervisor.h"
#include "cli/launch/torch_error_file.h"
#include "cli/options.h"
#include "cli/os/adopted_orphans.h"
#include "cli/os/cpu_topology.h"
#include "cli/os/machine.h"
#include "cli/os/oom_kills.h"
#include "cli/os/subprocess.h"
#include "cli/plan/plan.h"
#include "cli/plan/shell_quote.h"
#include "cli/plan_request.h"
#include "cli/plan/plan_output.h"
#include "cli/plan/tf_ports.h"
#include "cli/plan/thread_defaults.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "slurm/environment.h"
#include "cli/user_error.h"
#include "runtime/backends/backend_probe.h"
#include "runtime/common/cpu_budget.h"
#include "runtime/timeline/trace_files.h"
#include "runtime/common/hex.h"
#include "runtime/common/network_interface.h"
#include "runtime/common/shm_names.h"
#include "runtime/common/socket.h"
#include "runtime/rendezvous/protocol.h"

extern char** environ;

namespace hvd::cli {
namespace {

std::string versionText() {
  std::string backends;
  for (const auto& entry : backends::registeredBackends()) {
    if (entry.compiled) backends += (backends.empty() ? "" : " ") + std::string(entry.id);
  }
  std::string text = fmt::format("hvdrun {}\ncommit: {}\ncompiler: {}\nbuild type: {}\nbackends compiled in: {}\n",
                                 build_info::kVersion, build_info::kGitCommit, build_info::kCompiler,
                                 build_info::kBuildType, backends);
  if (build_info::kSanitizers[0] != '\0') text += fmt::format("sanitizers: {}\n", build_info::kSanitizers);
  return text;
}

// The parent environment with the plan's variables replacing any inherited value.
std::vector<std::string> inheritedEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& o : overrides) overridden |= o.compare(0, name.size() + 1, name + "=") == 0;
    if (!overridden) env.push_back(std::move(kv));
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

PlanRequest planRequestWithHostfile(const Options& o) {
  PlanRequest r = planRequestFrom(o);
  if (!o.hostfile.empty()) {
    auto text = readTextFile(o.hostfile);
    if (!text) {
      throw UserError(ExitCode::kUsage, "cannot read --hostfile: " + text.status().message(),
                      "--hostfile names a file of 'host slots=N' lines");
    }
    r.hostfileText = std::move(*text);
  }
  return r;
}

std::map<std::string, HostCounts> countHostsForPlan(const Options& o, const std::vector<std::string>& hosts);

Plan makePlan(const Options& o, const slurm::Environment& env) {
  PlanRequest request = planRequestWithHostfile(o);
  MachineFacts facts;
  facts.hostname = hostName();
  // Asking the driver costs a cuInit: only when CUDA_VISIBLE_DEVICES does not already say.
  if (!o.noGpu && !env.count("CUDA_VISIBLE_DEVICES")) facts.localGpuCount = backends::countLocalGpus();
  if (!o.ranksPerHostWord.empty()) facts.localCpuCount = usableCpuCount();  // --nproc-per-node cpu or auto
  if (auto port = freeTcpPort()) facts.freePort = *port;
  if (auto port = freeTcpPort()) facts.rendezvousPort = *port;
  // Only Slurm knows what --gres gave each node: an allocation's shell is not told.
  auto jobId = env.find("SLURM_JOB_ID");
  if (!o.noGpu && !o.noSlurm && o.hosts.empty() && o.hostfile.empty() && jobId != env.end()) {
    facts.slurmNodeGpus = querySlurmJobGpus(jobId->second);
  }
  // --nproc-per-node gpu, cpu or auto with -H hosts: each counts its own first, over ssh.
  if (auto hosts = hostsToCount(request, facts); !hosts.empty()) facts.sshHostCounts = countHostsForPlan(o, hosts);
  Plan plan = valueOrThrow(buildPlan(request, env, facts));
  plan.maxRestarts = o.maxRestarts;
  return plan;
}

// "0, 3, 7", the first `limit` of them, then ", ..." when there are more.
std::string rankListText(const std::vector<int>& ranks, size_t limit) {
  std::string list;
  for (size_t i = 0; i < ranks.size() && i < limit; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > limit) list += ", ...";
  return list;
}


// "exited with code 3", "was killed by SIGKILL".
std::string endText(const RankFailure& f) {
  if (f.frozenSeconds == 0) return "was frozen (stopped, state T) when a peer failed, and hvdrun killed it";
  if (f.frozenSeconds > 0) {
    return fmt::format("was frozen (stopped, state T) for {} s, as long as its peers wait in a collective "
                       "(HVD_TIMEOUT), and hvdrun killed it", f.frozenSeconds);
  }
  return f.signal != 0 ? fmt::format("was killed by {}", signalName(f.signal))
                       : fmt::format("exited with code {}", f.exitCode);
}

// An ssh launch's host agent (or its ssh) ended before its ranks could report: the
// connection failed or broke, or the agent could not start them.
std::string agentFailureText(const JobOutcome& outcome, const RankFailure& f) {
  std::string how = f.signal == 0 && f.exitCode == 255 ? std::string("lost its ssh connection (ssh exit code 255)")
                                                       : endText(f);
  std::string text = fmt::format("hvdrun: error: the host agent for {} (rank {} and the others there) {}\n", f.host,
                                 f.rank, how);
  if (!f.lastStderrLines.empty()) {
    text += "  its last words:\n";
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  }
  text += fmt::format("  hvdrun stopped the ranks on every other host; exit code {}\n", outcome.exitCode);
  return text;
}

// srun or mpirun failed without naming a rank: its own words (above, and kept) say why.
std::string launcherFailureText(const RankFailure& f) {
  std::string how = endText(f);
  std::string text = fmt::format("hvdrun: error: {} {}, and no rank reported a failure of its own (pid {}, at {})\n",
                                 f.launcher, how, f.pid, f.when.empty() ? nowIso8601() : f.when);
  if (!f.lastStderrLines.empty()) {
    text += fmt::format("  {}'s last words:\n", f.launcher);
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  }
  std::optional<std::string> hint;
  if (f.launcher == "srun") hint = srunTroubleHint({f.lastStderrLines.begin(), f.lastStderrLines.end()});
  if (hint) {
    text += fmt::format("  hint: {}\n", *hint);
  } else {
    text += fmt::format("  hint: {} could not start the job, or lost a node or a daemon on the way; its messages say "
                        "which\n", f.launcher);
  }
  return text;
}

std::string failureSummaryText(const JobOutcome& outcome, int total, const std::optional<RecordedError>& recorded) {
  const RankFailure& f = *outcome.firstFailure;
  if (f.launcherProcess) return agentFailureText(outcome, f);
  if (!f.launcher.empty()) return launcherFailureText(f);
  std::string how = endText(f);
  std::string where = "host " + f.host;
  if (f.pid > 0) where += fmt::format(", pid {}", f.pid);  // srun does not tell a task's pid
  if (!f.when.empty()) where += ", at " + f.when;
  std::string text = fmt::format("hvdrun: error: rank {} {} ({})\n", f.rank, how, where);
  if (!f.lastStderrLines.empty()) {
    text += fmt::format("  last lines of rank {}'s stderr:\n", f.rank);
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  } else {
    text += fmt::format("  rank {} wrote nothing to stderr\n", f.rank);
  }
  if (recorded) {
    text += fmt::format("  rank {} raised (recorded by torch's @record): {}\n", f.rank, recorded->message);
    if (!recorded->where.empty()) text += fmt::format("    {}\n", recorded->where);
  }
  if (f.peerEndedCleanly >= 0) {
    text += fmt::format("  rank {0} had ended with exit code 0 while rank {1} still ran collectives: every rank must "
                        "make the same collective calls, so one that returns early (work done on rank {0} alone, a "
                        "last batch only some ranks have) leaves its peers without it; hvd.join() lets a rank out "
                        "of data finish beside the others\n",
                        f.peerEndedCleanly, f.rank);
  }
  if (!outcome.stoppedWhenFailed.empty()) {
    text += fmt::format("  rank(s) {} {} stopped (SIGSTOP, or a debugger) when rank {} failed: a stopped rank stalls "
                        "its peers until their timeout, so look there first\n",
                        rankListText(outcome.stoppedWhenFailed, 16), outcome.stoppedWhenFailed.size() == 1 ? "was" : "were",
                        f.rank);
  }
  if (f.signal == SIGKILL && f.oomKillsOnHost > 0) {
    text += fmt::format("  the kernel's OOM killer ended {} process(es) on {} while the rank ran (oom_kill in "
                        "/proc/vmstat): rank {} most likely ran out of memory, its own or a limit's (a cgroup, Slurm's "
                        "--mem); dmesg there names what it killed\n",
                        f.oomKillsOnHost, f.host, f.rank);
  }
  if (f.signal != 0 && f.signal == outcome.noticePassedOn) {
    text += fmt::format("  hvdrun had passed {0} on to every rank (a notice, as from Slurm's --signal or scancel "
                        "--signal), and rank {1} had no handler for it, so it ended rank {1}\n",
                        signalName(f.signal), f.rank);
  }
  if (f.signal == 0 && f.exitCode == static_cast<int>(ExitCode::kStalled)) {
    text += "  a collective stalled: some ranks never submitted it within HOROVOD_STALL_SHUTDOWN_TIME_SECONDS "
            "(--stall-check-shutdown-time-seconds); the ranks' lines above name it and them\n";
  }
  std::string also;
  if (!outcome.alsoFailed.empty()) {
    std::vector<int> ranks = outcome.alsoFailed;
    std::sort(ranks.begin(), ranks.end());
    also = fmt::format("; {} other(s) ended with errors of their own (rank(s) {})", ranks.size(), rankListText(ranks, 16));
  }
  text += fmt::format("  hvdrun stopped {} other rank(s) of {}{}; exit code {}\n", outcome.ranksStopped, total, also,
                      outcome.exitCode);
  return text;
}

// --output-filename's directory keeps what hvdrun said of the job's end in "summary"
// beside the ranks' files: it is all there is when stderr was closed or went nowhere.
// An earlier job's is removed before the job starts, so one found there is this job's.
std::string summaryPath(const std::string& outputDir) { return outputDir + "/summary"; }

// Whether the summary path holds nothing, or a summary hvdrun wrote (a regular file that
// starts as every summary does): a directory given as --output-filename may hold a file of
// the user's by that name, or a link to one, which hvdrun must neither remove nor overwrite.
bool summaryIsOurs(const std::string& outputDir) {
  const std::string path = summaryPath(outputDir);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISREG(st.st_mode)) return false;
  char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::string_view(head, sizeof head) == "hvdrun: ";
}

// --output-filename, --ranks-filter, --timestamp-output. The directory is made before any
// rank starts, so a bad path fails the launch instead of losing output.
void applyOutputOptions(const Options& o, SupervisorOptions& supervision) {
  supervision.consoleRanks = o.ranksFilter;
  supervision.timestamps = o.timestampOutput;
  supervision.maxLineBytes = o.maxLineBytes;
  if (o.outputDir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.outputDir, ec);
  if (ec || !std::filesystem::is_directory(o.outputDir)) {
    throw UserError(ExitCode::kUsage, "--output-filename: cannot create directory '" + o.outputDir + "'" +
                                          (ec ? ": " + ec.message() : ""),
                    "give a directory hvdrun may create and write");
  }
  supervision.outputDir = o.outputDir;
  if (summaryIsOurs(o.outputDir)) std::filesystem::remove(summaryPath(o.outputDir), ec);  // an earlier job's
}

// The exception torch's @record wrote for the rank that failed first: in the error files of
// the ranks hvdrun forked (errorFiles, when it made them), or, for a rank on another node,
// handed over by its task shim or host agent (task_shim.h).
std::optional<RecordedError> recordedError(const JobOutcome& outcome, const TorchErrorFiles* errorFiles,
                                           const RendezvousServer& server) {
  if (!outcome.firstFailure) return std::nullopt;
  const int rank = outcome.firstFailure->rank;
  if (errorFiles != nullptr) return readTorchErrorFile(errorFiles->path(rank));
  auto text = server.value(recordedErrorKey(rank));
  if (!text) return std::nullopt;
  return decodeRecordedError(*text);
}

// What hvdrun says of the job's end, empty when there is nothing to say.
std::string reportText(const JobOutcome& outcome, int ranks, const std::optional<RecordedError>& recorded) {
  std::string text;
  if (outcome.consoleStalled) {
    text += "hvdrun: warning: the console stopped taking output, and hvdrun stopped waiting for it; the ranks' "
            "last lines are missing there\n";
  }
  if (!outcome.neverReady.empty()) {
    std::string list = rankListText(outcome.neverReady, 32);
    return text + fmt::format("hvdrun: error: rank(s) {} did not reach the rendezvous in time, while the other {} did; "
                              "stopped the job\n  hint: a rank stuck before the runtime's init, or unable to reach hvdrun; "
                              "--start-timeout gives start-up more time\n",
                              list, ranks - static_cast<int>(outcome.neverReady.size()));
  }
  if (!outcome.leftBehind.empty()) {
    std::vector<int> lost;
    for (const RankFailure& f : outcome.leftBehind) lost.push_back(f.rank);
    text += fmt::format("hvdrun: the elastic job went on without rank(s) {} after they failed\n", rankListText(lost, 32));
  }
  if (!outcome.consoleClosed.empty() && outcome.interruptSignal == SIGPIPE) {
    text += fmt::format("hvdrun: the reader of its {} went away (a broken pipe), so the ranks' output had nowhere "
                        "to go: stopped {} rank(s), as for SIGPIPE\n", outcome.consoleClosed, outcome.ranksStopped);
  } else if (outcome.interruptSignal != 0) {
    text += fmt::format("hvdrun: interrupted by {}; stopped {} rank(s)\n", signalName(outcome.interruptSignal),
                        outcome.ranksStopped);
  } else if (!outcome.firstFailure && outcome.ranksStoppedAfterCoordinator > 0) {
    text += fmt::format("hvdrun: the chief finished (exit 0), so the job is done: stopped its {} parameter server, "
                        "worker and evaluator rank(s)\n", outcome.ranksStoppedAfterCoordinator);
  } else if (outcome.firstFailure) {
    text += failureSummaryText(outcome, ranks, recorded);
  } else if (!outcome.consoleClosed.empty()) {
    text += fmt::format("hvdrun: the reader of its {} went away (a broken pipe) before all of the ranks' output "
                        "was written\n", outcome.consoleClosed);
  }
  return text;
}

void keepSummary(const std::string& outputDir, const std::string& text) {
  if (outputDir.empty() || text.empty()) return;
  if (!summaryIsOurs(outputDir)) {
    printTo(stderr, "hvdrun: warning: {} is not hvdrun's: left as it is, and this summary is on stderr only\n",
            summaryPath(outputDir));
    return;
  }
  std::ofstream out(summaryPath(outputDir), std::ios::trunc);
  out << text;
}

// A launcher (srun, mpirun) stands for every rank: the failing rank its messages name is
// the job's root cause and exit code, unless the job was interrupted or never started. With
// none named, the launcher's own end is the cause (the supervisor took it for rank 0's).
void adoptLauncherFailure(JobOutcome& result, std::optional<RankFailure> failure, const Plan& plan,
                          const std::string& launcher) {
  if (result.interruptSignal != 0) result.ranksStopped = static_cast<int>(plan.ranks.size());
  if (result.ranksStoppedAfterPreemption > 0) return;  // hvdrun stopped the step itself
  if (result.interruptSignal != 0 || !result.neverReady.empty()) return;
  if (!failure) {
    if (!result.firstFailure) return;
    result.firstFailure->launcher = launcher;
    if (auto it = result.launcherStderr.find(-1); it != result.launcherStderr.end()) {
      result.firstFailure->lastStderrLines = it->second;
    }
    return;
  }
  if (failure->host.empty() && failure->rank >= 0 && failure->rank < static_cast<int>(plan.ranks.size())) {
    failure->host = plan.ranks[static_cast<size_t>(failure->rank)].where.host;
  }
  failure->when = nowIso8601();
  if (auto it = result.launcherStderr.find(failure->rank); it != result.launcherStderr.end()) failure->lastStderrLines = it->second;
  result.exitCode = failure->signal != 0 ? 128 + failure->signal : failure->exitCode;
  result.ranksStopped = static_cast<int>(plan.ranks.size()) - 1;
  result.firstFailure = std::move(failure);
}

// The root cause the task shims reported (task_shim.h), or nullopt when none did (a job that
// did not fail, or an older hvdrun on the nodes): then the launcher's own messages tell.
// An elastic job's ranks it went on without are left out: they are not why it ended.
std::optional<RankFailure> rootCauseFromShims(const RendezvousServer* server, const JobOutcome& result,
                                              const std::set<int>& leftBehind = {}) {
  if (server == nullptr || result.exitCode == 0) return std::nullopt;
  auto count = server->value(kEndReportCountKey);
  std::vector<TaskEndReport> reports;
  for (long long i = 1, n = count ? std::atoll(count->c_str()) : 0; i <= n; ++i) {
    auto text = server->value(endReportKey(i));  // missing if its shim died between add and set
    auto report = text ? decodeTaskEndReport(*text) : std::nullopt;
    if (report && !leftBehind.count(report->rank)) reports.push_back(*report);
  }
  auto cause = rootCauseOf(reports);
  if (!cause) return std::nullopt;
  RankFailure f;
  f.rank = cause->rank;
  f.exitCode = cause->end.exitCode;
  f.signal = cause->end.signal;
  f.oomKillsOnHost = cause->oomKillsOnHost;
  // An error exit blamed on a rank that went first (its runtime's peer-gone report), which
  // its shim said had ended cleanly: the rank that returned early, named in the report.
  if (f.signal == 0) {
    std::set<int> seen{f.rank};
    int went = f.rank;
    while (auto text = server->value(rendezvous::peerGoneKey(went))) {
      auto next = rendezvous::parsePeerGone(*text);
      if (!next || !seen.insert(*next).second) break;
      went = *next;
    }
    if (went != f.rank && server->value(cleanEndKey(went))) f.peerEndedCleanly = went;
  }
  return f;
}

// A ParameterServerStrategy job under srun or mpirun: the chief's task shim said the chief
// exited 0, and the others stopped their ranks and exited 0 (task_shim.h).
void adoptCoordinatorEnd(JobOutcome& result, const RendezvousServer* server) {
  if (server == nullptr || result.firstFailure || result.interruptSignal != 0 || result.exitCode != 0) return;
  if (!server->value(kCoordinatorDoneKey)) return;
  auto stopped = server->value(kStoppedAfterCoordinatorKey);
  result.ranksStoppedAfterCoordinator = stopped ? std::atoi(stopped->c_str()) : 0;
}

// The job's rendezvous server, started before any rank; the plan learns its real port.
std::unique_ptr<RendezvousServer> startRendezvous(Plan& plan, const std::string& secret) {
  // Ranks all on this machine reach it over loopback: nothing else needs to; an ssh launch's
  // chosen address is the only one it listens on (srun's ranks, given a host name, use the
  // address they were launched from, so every interface).
  auto server = RendezvousServer::start(0, secret, listenAddressFor(plan.rendezvousAddr));
  if (!server) throw UserError(ExitCode::kEnvironment, server.status().message());
  plan.rendezvousPort = (*server)->port();
  return std::move(*server);
}

void superviseStart(const Options& o, RendezvousServer& server, SupervisorOptions& supervision) {
  supervision.startTimeout = o.startTimeout;
  supervision.readyRanks = [&server] { return server.readyRanks(); };
  supervision.peerGoneOf = [&server](int rank) -> std::optional<int> {
    auto text = server.value(rendezvous::peerGoneKey(rank));
    return text ? rendezvous::parsePeerGone(*text) : std::nullopt;
  };
}

// The preemption notice: a file every rank can see (HVD_PREEMPT_FILE), created when the
// signal arrives. Inside Slurm it lives in the submit directory, which the job's nodes
// share on any cluster where a job script can be submitted from it; it is removed when
// hvdrun ends, so a requeued run starts without it.
class PreemptionFlag {
 public:
  PreemptionFlag(const Options& o, const slurm::Environment& env) : signal_(o.preemptSignal) {
    auto jobId = slurm::lookup(env, "SLURM_JOB_ID");
    auto submitDir = slurm::lookup(env, "SLURM_SUBMIT_DIR");
    // Unpredictable names: a flag another user can create or plant a symlink at would make
    // the job checkpoint and stop, or hvdrun write through the link.
    auto random = randomHex(8);
    if (!random) throw UserError(ExitCode::kEnvironment, random.status().message());
    if (jobId && submitDir && !submitDir->empty()) {
      path_ = std::string(*submitDir) + "/.hvdrun-preempt-" + std::string(*jobId) + "-" + *random;
    } else {
      // Outside Slurm, in a directory only this user may enter (mkdtemp makes it 0700).
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hvdrun-XXXXXX";
      if (::mkdtemp(pattern.data()) == nullptr) {
        throw UserError(ExitCode::kEnvironment,
                        fmt::format("cannot create a private directory for the preemption flag ({}): {}", pattern,
                                    std::strerror(errno)),
                        "set TMPDIR to a writable directory");
      }
      privateDir_ = pattern;
      path_ = privateDir_ + "/preempt";
    }
  }
  ~PreemptionFlag() {
    std::remove(path_.c_str());
    if (!privateDir_.empty()) ::rmdir(privateDir_.c_str());
  }
  PreemptionFlag(const PreemptionFlag&) = delete;
  PreemptionFlag& operator=(const PreemptionFlag&) = delete;

  std::vector<std::string> environment() const {
    return {"HVD_PREEMPT_FILE=" + path_, "HVD_PREEMPT_SIGNAL=" + signal_};
  }
  int signalNumber() const { return signal_ == "USR1" ? SIGUSR1 : SIGUSR2; }
  void raise() const {
    // O_EXCL|O_NOFOLLOW: never through a link, never into a file someone else made.
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "w");
    if (f == nullptr) {
      if (fd >= 0) ::close(fd);
      printTo(stderr, "hvdrun: warning: cannot create the preemption flag {}: {}; ranks still get SIG{}\n", path_,
                 std::strerror(errno), signal_);
      return;
    }
    printTo(f, "SIG{} at {}\n", signal_, nowIso8601());
    std::fclose(f);
  }

 private:
  std::string signal_;
  std::string path_;
  std::string privateDir_;  // outside Slurm: removed with the flag
};

// After a preempted job: say what happened and, with --requeue, put the job back in the
// queue. scontrol requeue ends this job (and this process) at once, so it comes last.
void finishPreemption(const Options& o, const JobOutcome& outcome, bool toldByRanks, const slurm::Environment& env) {
  if (!outcome.preempted) return;
  if (toldByRanks) {
    printTo(stderr, "hvdrun: the ranks agreed on a preemption notice sent to them directly\n");
  } else {
    printTo(stderr, "hvdrun: preemption notice (SIG{}) passed to every rank{}\n", o.preemptSignal,
               outcome.ranksStoppedAfterPreemption > 0
                   ? fmt::format("; ranks still running {} s later (--preempt-grace) were stopped",
                                 std::chrono::duration_cast<std::chrono::seconds>(o.preemptGrace).count())
                   : "");
  }
  if (!o.requeue) return;
  auto jobId = slurm::lookup(env, "SLURM_JOB_ID");
  if (!jobId) {
    printTo(stderr, "hvdrun: warning: --requeue: not inside a Slurm job, nothing to requeue\n");
    return;
  }
  // Said before: the requeue ends this batch script, hvdrun with it, often before scontrol
  // has returned (the line said afterwards was missing in 1 of 5 runs of the cluster suite).
  printTo(stderr, "hvdrun: requeueing job {} (scontrol requeue)\n", *jobId);
  std::fflush(stderr);
  RunOptions options;
  options.timeout = std::chrono::seconds(60);
  auto run = runAndCapture({"scontrol", "requeue", std::string(*jobId)}, options);
  if (!run.isOk() || !run->succeeded()) {
    std::string why = run.isOk() ? run->err : run.status().message();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw UserError(ExitCode::kEnvironment, "--requeue: scontrol requeue " + std::string(*jobId) + " failed: " + why,
                    "the job may not be requeueable (sbatch --requeue, JobRequeue in slurm.conf)");
  }
}

// How a launch is watched: the output options, the grace, the launcher's labels, the
// preemption notice and the start timeout (when a rendezvous server runs).
SupervisorOptions supervisionFor(const Options& o, const Plan& plan, RendezvousServer* server,
                                 SupervisorOptions::Labels labels, const PreemptionFlag& preemption) {
  SupervisorOptions supervision;
  supervision.rankCount = static_cast<int>(plan.ranks.size());
  supervision.prefixOutput = o.prefixOutput;
  supervision.killGrace = o.killGrace;
  supervision.labels = labels;
  supervision.preemptSignal = preemption.signalNumber();
  supervision.onPreempt = [&preemption] { preemption.raise(); };
  if (o.requeue) supervision.preemptGrace = o.preemptGrace;
  applyOutputOptions(o, supervision);
  supervision.appendOutputFiles = plan.restartCount > 0;  // the failed starts' output stays
  if (server != nullptr) superviseStart(o, *server, supervision);
  return supervision;
}

// The newest of an elastic job's worlds whose ranks all arrived (-1: none yet).
long long lastFormedWorld(const RendezvousServer& server, long long newest) {
  for (long long g = newest; g >= 0; --g) {
    if (server.value(rendezvous::elasticFormedKey(g))) return g;
  }
  return -1;
}

// The workers waiting in world `generation` (they arrived there).
std::set<int> waitingIn(const RendezvousServer& server, const ElasticWorld& world, long long generation) {
  std::set<int> waiting;
  for (int w : world.running()) {
    if (server.value(rendezvous::elasticArrivedKey(generation, w))) waiting.insert(w);
  }
  return waiting;
}

// Elastic training: a rank ended by itself. A failed one leaves the others to go on as the
// next world, when the job may; either way hvdrun says what happens to the job. A clean end
// is the training's end, which a world still forming would wait for in vain: the ranks
// waiting for it are stopped where the launch can stop a rank (canStop), and then told.
SupervisorOptions::AfterRankEnd elasticRankEnded(const Options& o, ElasticWorld& world, RendezvousServer& server,
                                                 const std::vector<int>& ranks, const RankFailure* failure,
                                                 bool canStop) {
  const int rank = ranks.front();
  if (failure == nullptr) {
    const long long newest = world.generation();
    auto change = world.workerFinished(rank, lastFormedWorld(server, newest), waitingIn(server, world, newest));
    auto publish = [&server, keys = change.keys, why = "the elastic job ended: " + change.why] {
      if (!keys.values.empty()) server.publish(keys.values, keys.abandonPrefix, why);
    };
    if (change.stop.empty() || !canStop) {
      publish();
      return {.goesOn = change.goesOn};
    }
    printTo(stderr, "hvdrun: {}, so the job's training is done: stopping rank(s) {}, which were waiting for that "
                    "world\n", change.why, rankListText(change.stop, 32));
    return {change.goesOn, change.stop, publish};
  }
  // Several ended together only with their host agent: one new world without them, one line.
  auto change = world.workersFailed(ranks);
  const bool one = ranks.size() == 1;
  const std::string who = (one ? "rank " : "ranks ") + rankListText(ranks, 32);
  // A host agent's end stands for its ranks': the host (or the connection to it) was lost.
  const std::string how = failure->launcherProcess ? fmt::format("{} lost with host {} (its agent {})",
                                                                 one ? "was" : "were", failure->host, endText(*failure))
                                                   : endText(*failure);
  if (!change.goesOn) {
    if (!change.why.empty()) {
      printTo(stderr, "hvdrun: {} {}, and the elastic job cannot go on without {}: {}\n", who, how, one ? "it" : "them",
              change.why);
      server.publish(change.keys.values, change.keys.abandonPrefix, "the elastic job ended: " + change.why);
    }
    return {};
  }
  server.publish(change.keys.values, change.keys.abandonPrefix,
                 fmt::format("the job's world changed while this rank joined it ({} {})", who, how));
  printTo(stderr, "hvdrun: {} {}; the other {} rank(s) go on without {} as the job's world {} (--min-np {}), "
                  "numbered 0-{} in the order of their first ranks\n",
          who, how, world.size(), one ? "it" : "them", world.generation(), o.minNp, world.size() - 1);
  return {.goesOn = true};
}

// An elastic job's ranks: a worker's number is its first rank (elastic_world.h).
void appendElasticVariables(const Options& o, int worker, std::vector<std::string>& rankEnv) {
  if (o.minNp == 0) return;
  rankEnv.push_back("HVD_ELASTIC_WORKER=" + std::to_string(worker));
  rankEnv.push_back("HOROVOD_ELASTIC=1");
  if (o.elasticTimeout > 0) rankEnv.push_back("HVD_ELASTIC_TIMEOUT=" + std::to_string(o.elasticTimeout));
}

// The ranks' HVD_TIMEOUT: hvdrun's --timeout, else what they inherit, else the runtime's default.
std::chrono::milliseconds ranksTimeout(const Options& o) {
  return rankTimeout([&o](const char* name) -> const char* {
    const std::string prefix = std::string(name) + "=";
    const char* given = nullptr;
    for (const std::string& kv : o.runtimeVariables) {
      if (kv.rfind(prefix, 0) == 0) given = kv.c_str() + prefix.size();
    }
    return given != nullptr ? given : std::getenv(name);
  });
}

// An elastic job (--min-np): the first world is published before any rank starts, and the
// supervisor asks `world` whether the job goes on each time a rank ends; a rank frozen as
// long as its peers wait in a collective (HVD_TIMEOUT) fails.
void superviseElastic(const Options& o, const Plan& plan, RendezvousServer* server, std::optional<ElasticWorld>& world,
                      SupervisorOptions& supervision) {
  if (o.minNp == 0 || server == nullptr) return;
  std::vector<std::string> hosts;
  for (const RankPlan& r : plan.ranks) hosts.push_back(r.where.host);
  world.emplace(std::move(hosts), o.minNp, o.resetLimit);
  auto first = world->firstWorld();
  server->publish(first.values, first.abandonPrefix, "");
  supervision.rankEnded = [&o, &world, server](const std::vector<int>& ranks, const RankFailure* failure) {
    return elasticRankEnded(o, *world, *server, ranks, failure, true);
  };
  supervision.frozenFails = ranksTimeout(o);
}

// An elastic job under srun (--kill-on-bad-exit=0, so a failed task leaves the step
// running): the task shims' reports reach hvdrun through the rendezvous, and the world is
// decided on the server's thread as they come in.
class SrunElastic {
 public:
  void start(const Options& o, const Plan& plan, RendezvousServer& server) {
    std::vector<std::string> hosts;
    for (const RankPlan& r : plan.ranks) hosts.push_back(r.where.host);
    world_.emplace(std::move(hosts), o.minNp, o.resetLimit);
    auto first = world_->firstWorld();
    server.publish(first.values, first.abandonPrefix, "");
    const std::string reports = std::string(kEndReportCountKey) + "/";
    server.onSet([this, &o, &plan, &server, reports](const std::string& key, const std::string& value) {
      std::optional<int> rank;
      std::optional<RankFailure> failure;
      if (key.rfind(reports, 0) == 0) {
        auto report = decodeTaskEndReport(value);
        if (!report || report->toldToStop) return;  // srun stopping the step is no rank's failure
        rank = report->rank;
        failure.emplace();
        failure->rank = report->rank;
        failure->exitCode = report->end.exitCode;
        failure->signal = report->end.signal;
        failure->oomKillsOnHost = report->oomKillsOnHost;
        failure->when = nowIso8601();
        if (*rank >= 0 && *rank < static_cast<int>(plan.ranks.size())) {
          failure->host = plan.ranks[static_cast<size_t>(*rank)].where.host;
        }
      } else if (auto ended = cleanEndRank(key)) {
        rank = ended;
      }
      if (!rank) return;
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure) ++badReports_;
      // srun cannot stop one task of its step: ranks waiting in a world that will not form
      // are told so at once (their init() fails saying why) instead (AfterRankEnd::stop).
      if (elasticRankEnded(o, *world_, server, {*rank}, failure ? &*failure : nullptr, false).goesOn && failure) {
        leftBehind_.push_back(*failure);
      }
    });
  }

  // After srun: true when the job ended well, every failed rank's loss taken in stride (srun
  // exits with the worst task's code all the same); `result` then says so.
  bool finish(JobOutcome& result) {
    if (!world_) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    result.leftBehind = leftBehind_;
    if (world_->ended() || result.interruptSignal != 0 || !result.neverReady.empty() || leftBehind_.empty() ||
        result.exitCode == 0) {
      return false;
    }
    // Every bad end the shims reported is one the job went on without; a task that ended
    // badly without a report (its shim lost with it) is not, and fails the job as before.
    if (badReports_ != leftBehind_.size()) return false;
    result.exitCode = 0;
    result.firstFailure.reset();
    return true;
  }

  std::set<int> leftBehindRanks() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<int> ranks;
    for (const RankFailure& f : leftBehind_) ranks.insert(f.rank);
    return ranks;
  }

 private:
  static std::optional<int> cleanEndRank(const std::string& key) {
    const std::string prefix = cleanEndKey(0).substr(0, cleanEndKey(0).size() - 1);
    if (key.rfind(prefix, 0) != 0) return std::nullopt;
    return rendezvous::parsePeerGone(std::string_view(key).substr(prefix.size()));  // a rank number
  }

  std::mutex mutex_;
  std::optional<ElasticWorld> world_;
  std::vector<RankFailure> leftBehind_;
  size_t badReports_ = 0;  // the shims' reports of ranks that failed by themselves
};

// Inside a Slurm allocation: one srun step runs the plan (never ssh there).
JobOutcome launchWithSrun(const Options& o, const Plan& plan, const std::vector<std::string>& jobWide,
                          const slurm::Environment& env, RendezvousServer* server, const PreemptionFlag& preemption) {
  auto srun = findExecutable("srun", searchPath());
  if (!srun) {
    throw UserError(ExitCode::kEnvironment, "the plan comes from " + plan.sourceDetail + " but srun is not in PATH",
                    "--no-slurm runs on this machine only");
  }
  char dir[] = "/tmp/hvdrun.XXXXXX";
  if (::mkdtemp(dir) == nullptr) throw UserError(ExitCode::kEnvironment, "cannot create a temporary directory");
  std::string hostfile = std::string(dir) + "/hosts";
  {
    std::FILE* f = std::fopen(hostfile.c_str(), "w");
    std::string text = srunHostfile(plan);
    bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f != nullptr) ok = std::fclose(f) == 0 && ok;
    if (!ok) throw UserError(ExitCode::kEnvironment, "cannot write " + hostfile);
  }
  bool insideStep = env.count("SLURM_STEP_ID") > 0;
  SrunCommand command = srunCommand(plan, o, thisExecutable(), hostfile, jobWide, insideStep);
  RankProcess srunProcess{.host = plan.masterAddr, .executable = *srun, .argv = command.argv, .env = inheritedEnvironment(command.env)};
  SupervisorOptions supervision = supervisionFor(o, plan, server, SupervisorOptions::Labels::kSrun, preemption);
  SrunElastic elastic;
  if (o.minNp > 0 && server != nullptr) elastic.start(o, plan, *server);
  auto outcome = superviseRanks({srunProcess}, supervision);
  std::remove(hostfile.c_str());
  ::rmdir(dir);
  JobOutcome result = valueOrThrow(std::move(outcome));
  if (elastic.finish(result)) return result;
  // srun exits 143 after stopping the step and names whichever failing task it heard of
  // first; the shims' reports tell which failed first.
  auto shims = rootCauseFromShims(server, result, elastic.leftBehindRanks());
  adoptLauncherFailure(result, shims ? shims : firstSrunFailure(result.launcherMessages), plan, "srun");
  adoptCoordinatorEnd(result, server);
  return result;
}

// --mpi: Open MPI's mpirun runs the plan; ranks learn who they are from OMPI_COMM_WORLD_*.
JobOutcome launchWithMpirun(const Options& o, const Plan& plan, const std::vector<std::string>& jobWide,
                            RendezvousServer* server, const PreemptionFlag& preemption) {
  auto mpirun = findExecutable("mpirun", searchPath());
  if (!mpirun) {
    throw UserError(ExitCode::kEnvironment, "--mpi needs Open MPI's mpirun, which is not in PATH",
                    "install openmpi-bin, or launch without --mpi");
  }
  MpirunCommand command = mpirunLaunchCommand(plan, o, thisExecutable(), jobWide, ::geteuid() == 0);
  RankProcess process{.host = plan.masterAddr, .executable = *mpirun, .argv = command.argv, .env = inheritedEnvironment(command.env)};
  SupervisorOptions supervision = supervisionFor(o, plan, server, SupervisorOptions::Labels::kOpenMpi, preemption);
  JobOutcome result = valueOrThrow(superviseRanks({process}, supervision));
  auto shims = rootCauseFromShims(server, result);
  adoptLauncherFailure(result, shims ? shims : firstMpirunFailure(result.launcherMessages), plan, "mpirun");
  adoptCoordinatorEnd(result, server);
  return result;
}

// Of the job-wide variables, those a rank hvdrun's agents start needs beside its plan (which
// already holds MASTER_PORT and the rendezvous address): the secret and the preemption notice.
void appendRankJobWide(const std::vector<std::string>& jobWide, std::vector<std::string>& rankEnv) {
  for (const std::string& kv : jobWide) {
    if (kv.rfind("HVD_SECRET_KEY=", 0) == 0 || kv.rfind("HVD_PREEMPT_", 0) == 0) rankEnv.push_back(kv);
  }
}

// --bind-to for `localRanks` ranks hvdrun forks on this machine: each one's CPUs.
std::vector<std::vector<int>> localCpuBindings(BindTo bind, int localRanks) {
  if (bind == BindTo::kNone) return std::vector<std::vector<int>>(static_cast<size_t>(localRanks));
  auto usable = usableCpuTopology();
  if (!usable) throw UserError(ExitCode::kEnvironment, "--bind-to: " + usable.status().message());
  auto bindings = cpuBindings(bind, localRanks, *usable);
  if (!bindings) throw UserError(ExitCode::kUsage, bindings.status().message(), bindings.status().hint());
  return *bindings;
}

// Once the ranks are gone: what they left running outside their sessions (adopted_orphans.h)
// is stopped, and hvdrun says so.
void stopLeftovers(pid_t guardian, std::chrono::milliseconds grace) {
  auto stopped = stopAdoptedOrphans({guardian}, grace);
  if (!stopped.empty()) printTo(stderr, "{}", stoppedOrphansLine(stopped, ""));
}

// How an ssh launch reaches the other hosts.
struct SshLaunch {
  SshSettings ssh;
  std::string client;        // the ssh executable
  std::string remoteHvdrun;  // hvdrun's path on the other hosts
};

// Over ssh, a host whose GPUs hvdrun does not know (another -H host) has its agent share them
// out, unless --no-gpu leaves CUDA_VISIBLE_DEVICES alone.
bool agentDecidesGpus(const Options& o, const HostPlan& h) { return !o.noGpu && !h.local && h.devices.empty(); }

GpuRule gpuRule(const Options& o) { return {o.gpusPerRank, o.oversubscribeGpus, o.tfConfig}; }

// An elastic job whose hosts change (--host-discovery-script): while the script gives a host
// more slots than ranks run there (in all, up to --max-np), more are started there and the
// job's next world has them: forked on this machine, or (an ssh launch) through a new host
// agent for each host and round. After a rank failed on a host no more are started there
// (horovodrun blacklists it). A host given fewer slots loses ranks (fewer()). Used on the
// supervisor's thread only.
// How a launch starts a rank it adds: forked (the program and the thread variables), or
// through a host agent (ssh set: how to reach the host, and the job's /dev/shm prefix).
struct GrowthLaunch {
  std::string executable{};
  std::vector<std::string> threadVars{};
  const SshLaunch* ssh = nullptr;
  std::string shmPrefix{};
};

struct JobGrowth {
  const Options& o;
  const Plan& plan;
  const std::vector<std::string>& jobWide;
  ElasticWorld& world;
  RendezvousServer& server;
  HostDiscovery& discovery;
  GrowthLaunch how;
  // Hosts where a rank failed, until when (--blacklist-cooldown-range; time_point::max():
  // for the rest of the job).
  std::map<std::string, std::chrono::steady_clock::time_point> blacklisted;
  std::set<std::string> elsewhere;  // hosts named that this launch cannot reach, said once
  std::set<std::string> listed{};        // hosts the script has named
  std::set<std::string> refusedShrink{};  // why a shrink could not be, said once
  std::optional<ElasticGpus> gpus{};  // this machine's, where the plan gives each rank its own
  bool pinning = false;               // so it does
  bool noGpuSaid = false;
  bool twiceSaid = false;  // that the script names this machine twice
  // Over ssh, the GPUs of each host whose agents share them out, as positions in the host's
  // list of devices ("0", "1", ...), which only its agents know: the plan's ranks there hold
  // theirs by local rank (assignHostGpus's rule), and ranks added since the ones given them.
  std::map<std::string, ElasticGpus> positions{};
  // --bind-to: each host's blocks of cores (elastic_cpus.h), made at its first added rank.
  std::map<std::string, ElasticCpuBlocks> cpuBlocks{};
  std::set<std::string> unpinnedSaid{};  // hosts where an added rank found every block held

  void rankFailed(const std::string& host) {
    const std::string where = isThisMachine(host) ? hereName() : host;
    const auto now = std::chrono::steady_clock::now();
    if (auto it = blacklisted.find(where); it != blacklisted.end() && it->second > now) return;  // said already
    if (o.cooldownMax == 0) {
      blacklisted[where] = std::chrono::steady_clock::time_point::max();
      printTo(stderr, "hvdrun: a rank failed on {}, so hvdrun starts no more ranks there (--host-discovery-script)\n",
              where);
      return;
    }
    // A random cooldown in the range, as horovodrun's: hosts that failed together do not all
    // come back at once.
    static std::mt19937 random{std::random_device{}()};
    const int seconds = std::uniform_int_distribution<int>(o.cooldownMin, o.cooldownMax)(random);
    blacklisted[where] = now + std::chrono::seconds(seconds);
    printTo(stderr, "hvdrun: a rank failed on {}, so hvdrun starts no ranks there for {} s "
                    "(--blacklist-cooldown-range)\n", where, seconds);
  }

  bool isBlacklisted(const std::string& host) const {
    auto it = blacklisted.find(host);
    return it != blacklisted.end() && std::chrono::steady_clock::now() < it->second;
  }

  // The script's hosts, as this launch names them (this machine: the plan's name for it). A
  // second name of this machine (localhost and its host name) is left out, said once: each
  // added ranks for itself.
  std::vector<DiscoveredHost> latestHosts() {
    std::vector<DiscoveredHost> hosts;
    std::optional<DiscoveredHost> here;  // the line that named this machine first
    for (const DiscoveredHost& h : discovery.latest()) {
      if (!isThisMachine(h.host)) {
        hosts.push_back(h);
        continue;
      }
      if (here) {
        if (!twiceSaid) {
          twiceSaid = true;
          printTo(stderr, "hvdrun: warning: the host discovery script names this machine twice ('{}' and '{}'): "
                          "hvdrun takes the first ({}:{})\n", here->host, h.host, here->host, here->slots);
        }
        continue;
      }
      here = h;
      hosts.push_back({hereName(), h.slots});
    }
    return hosts;
  }

  std::map<std::string, int> discoveredSlots() {
    std::map<std::string, int> slots;
    for (const DiscoveredHost& h : latestHosts()) {
      slots[h.host] = h.slots;
      listed.insert(h.host);
    }
    return slots;
  }

  // A host the script listed and lists no more, or with fewer slots than ranks run there:
  // the excess ranks (the newest first) leave for the next world, stopped by hvdrun, as
  // Horovod stops a removed host's workers. Over ssh a host agent stops those of its ranks
  // that go ("stop <rank>") and keeps the others, or, when all of them go, is stopped itself.
  // A host the script never named (-H's, perhaps under another name) is left alone. Never
  // below --min-np: the ranks then keep running, said once.
  std::vector<int> fewer() {
    if (world.ended() || world.finishing()) return {};
    std::map<std::string, int> slots = discoveredSlots();
    std::map<std::string, int> running;
    for (int w : world.running()) ++running[world.hostOf(w)];
    std::map<std::string, std::vector<int>> removing;  // by host
    const std::vector<int>& order = world.running();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::string& host = world.hostOf(*it);
      const int allowed = slots.count(host) ? slots.at(host) : 0;
      if (!listed.count(host) || running[host] <= allowed) continue;
      removing[host].insert(removing[host].begin(), *it);
      --running[host];
    }
    std::vector<int> all;
    for (const auto& [host, workers] : removing) all.insert(all.end(), workers.begin(), workers.end());
    if (all.empty()) return {};
    auto change = world.workersRemoved(all);
    if (!change.goesOn) {
      if (!change.why.empty() && refusedShrink.insert(change.why).second) {
        printTo(stderr, "hvdrun: warning: the host discovery script gives fewer slots than rank(s) {} run on, but "
                        "they keep running: {}\n", rankListText(all, 32), change.why);
      }
      return {};
    }
    server.publish(change.keys.values, change.keys.abandonPrefix, "the job's world shrank while this rank joined it");
    for (const auto& [host, workers] : removing) {
      const int left = slots.count(host) ? slots.at(host) : 0;
      printTo(stderr, "hvdrun: the host discovery script {} {}: stopping rank(s) {} there; the job's world {} has "
                      "the other {} rank(s)\n",
              left == 0 ? "no longer lists" : "gives " + std::to_string(left) + " slot(s) on", host,
              rankListText(workers, 32), world.generation(), world.size());
    }
    return all;
  }

  std::vector<RankProcess> more() {
    std::vector<RankProcess> started;
    if (world.ended()) return started;
    std::vector<std::string> hosts;  // one entry per rank to add
    int total = world.size();
    for (const DiscoveredHost& h : latestHosts()) {
      const std::string& host = h.host;
      if (isBlacklisted(host)) continue;
      if (how.ssh == nullptr && host != plan.ranks.front().where.host) {
        if (elsewhere.insert(h.host).second) {
          printTo(stderr, "hvdrun: warning: the host discovery script names {}, which is not this machine: a job "
                          "hvdrun runs on this machine alone grows here only (give -H to run over ssh)\n", h.host);
        }
        continue;
      }
      int adding = h.slots - world.runningOn(host);
      if (o.maxNp > 0) adding = std::min(adding, o.maxNp - total);
      for (int i = 0; i < adding; ++i) hosts.push_back(host);
      total += std::max(adding, 0);
    }
    if (hosts.empty()) return started;
    auto grown = world.addWorkers(hosts);
    if (grown.workers.empty()) return started;
    server.publish(grown.keys.values, grown.keys.abandonPrefix, "the job's world grew while this rank joined it");
    // Each host's new ranks, in worker order.
    std::map<std::string, std::vector<int>> byHost;
    for (size_t i = 0; i < grown.workers.size(); ++i) byHost[hosts[i]].push_back(grown.workers[i]);
    std::map<int, rendezvous::ElasticIdentity> identity;
    for (size_t i = 0; i < grown.workers.size(); ++i) identity[grown.workers[i]] = grown.identities[i];
    for (const auto& [host, workers] : byHost) {
      printTo(stderr, "hvdrun: the host discovery script gives {} {} more slot(s): started rank(s) {} there; the "
                      "job's world {} has {} rank(s)\n",
              host, workers.size(),
              workers.size() == 1 ? std::to_string(workers.front())
                                  : fmt::format("{}-{}", workers.front(), workers.back()),  // new, so in a row
              world.generation(), world.size());
      if (how.ssh == nullptr) {
        for (int worker : workers) started.push_back(forked(worker, identity.at(worker), grown.after));
      } else {
        started.push_back(agent(host, workers, identity, grown.after));
      }
    }
    return started;
  }

  // The plan's GPUs of this machine, where it gives each rank its own (--gpus-per-rank).
  void knowGpus() {
    if (gpus) return;
    const std::string& here = plan.ranks.front().where.host;
    auto host = std::find_if(plan.hosts.begin(), plan.hosts.end(), [&](const HostPlan& h) { return h.host == here; });
    std::map<int, std::vector<std::string>> own;
    for (const RankPlan& r : plan.ranks) {
      if (r.where.host == here && static_cast<int>(r.gpus.size()) == o.gpusPerRank) own[r.where.rank] = r.gpus;
    }
    pinning = o.gpusPerRank >= 1 && !own.empty() && host != plan.hosts.end();
    gpus.emplace(pinning ? host->devices : std::vector<std::string>{}, std::move(own),
                 pinning && host->gpusByLocalRank, o.gpusPerRank);
  }

  // A forked rank's GPUs: devices no running rank here holds (elastic_gpus.h).
  void giveGpu(int worker, RankPlan& r) {
    knowGpus();
    std::vector<int> localOrder;
    for (int w : world.running()) {
      if (world.hostOf(w) == r.where.host) localOrder.push_back(w);
    }
    if (auto seen = gpus->give(worker, localOrder)) {
      r.gpus = seen->own;
      r.visibleGpus = seen->visible;
      r.localGpu = seen->localGpu;
    } else if (pinning && !noGpuSaid) {
      noGpuSaid = true;
      const std::string held = o.gpusPerRank == 1
                                   ? "every GPU of " + r.where.host + " is held by a running rank"
                                   : "fewer than " + std::to_string(o.gpusPerRank) + " GPUs of " + r.where.host +
                                         " are free of running ranks";
      printTo(stderr, "hvdrun: warning: {}: rank {} and later ones added there get none of their own (they see "
                      "hvdrun's)\n", held, worker);
    }
  }

  // The plan's name for this machine: rank 0's host when every rank runs here; over ssh the
  // plan's host that is this machine, else its own name. (Over ssh rank 0's host is another
  // one: taken for this machine, a rank added there was started here under its name, and
  // failed to listen on that host's address.)
  std::string hereName() const {
    if (how.ssh == nullptr) return plan.ranks.front().where.host;
    auto local = std::find_if(plan.hosts.begin(), plan.hosts.end(), [](const HostPlan& h) { return h.local; });
    return local != plan.hosts.end() ? local->host : hostName();
  }

  bool isThisMachine(const std::string& host) const {
    return host == "localhost" || host == "127.0.0.1" || host == hostName() || host == hereName();
  }

  // Over ssh, the positions in `host`'s devices for a rank added there: ones no running rank
  // there holds, seen as the plan's rule has it (elastic_gpus.h). nullopt where hvdrun gives
  // no GPUs, shares them round robin (--oversubscribe-gpus), or knows the host's devices itself.
  std::optional<GpuPositions> gpuPositions(int worker, const std::string& host) {
    if (o.noGpu || o.gpusPerRank < 1 || o.oversubscribeGpus || isThisMachine(host)) return std::nullopt;
    auto inPlan = std::find_if(plan.hosts.begin(), plan.hosts.end(), [&](const HostPlan& h) { return h.host == host; });
    if (inPlan != plan.hosts.end() && !agentDecidesGpus(o, *inPlan)) return std::nullopt;
    auto it = positions.find(host);
    if (it == positions.end()) {
      // Far more positions than any host has devices: the agent checks them against its own.
      std::vector<std::string> all;
      for (int i = 0; i < 4096; ++i) all.push_back(std::to_string(i));
      std::map<int, std::vector<std::string>> own;
      int index = 0;
      for (const RankPlan& r : plan.ranks) {
        if (r.where.host != host || !usesGpu(r.role)) continue;
        for (int k = 0; k < o.gpusPerRank; ++k) own[r.where.rank].push_back(std::to_string(index * o.gpusPerRank + k));
        ++index;
      }
      it = positions.emplace(host, ElasticGpus(std::move(all), std::move(own), !o.tfConfig, o.gpusPerRank)).first;
    }
    std::vector<int> localOrder;
    for (int w : world.running()) {
      if (world.hostOf(w) == host) localOrder.push_back(w);
    }
    auto seen = it->second.give(worker, localOrder);
    if (!seen) return std::nullopt;
    auto numbers = [](const std::vector<std::string>& names) {
      std::vector<int> out;
      for (const std::string& n : names) out.push_back(std::stoi(n));
      return out;
    };
    return GpuPositions{numbers(seen->own), numbers(seen->visible), seen->localGpu};
  }

  // --bind-to: the block of `host`'s cores for worker `added` (elastic_cpus.h): the plan split
  // them into one block per rank it put there (a host it put none on: one per slot the script
  // gives it now). nullopt where the rank runs unpinned, said once per host.
  std::optional<CpuBlock> cpuBlock(int added, const std::string& host) {
    if (plan.bindTo == BindTo::kNone) return std::nullopt;
    auto it = cpuBlocks.find(host);
    if (it == cpuBlocks.end()) {
      std::map<int, int> own;
      for (const RankPlan& r : plan.ranks) {
        if (r.where.host == host) own[r.where.rank] = r.where.localRank;
      }
      int blocks = static_cast<int>(own.size());
      for (const DiscoveredHost& h : latestHosts()) {
        if (blocks == 0 && h.host == host) blocks = h.slots;
      }
      it = cpuBlocks.emplace(host, ElasticCpuBlocks(plan.bindTo, blocks, std::move(own))).first;
    }
    std::vector<int> localOrder;
    for (int w : world.running()) {
      if (world.hostOf(w) == host) localOrder.push_back(w);
    }
    auto block = it->second.give(added, localOrder);
    if (!block) {
      if (unpinnedSaid.insert(host).second) {
        printTo(stderr, "hvdrun: warning: --bind-to {}: every block of cores on {} is held by a running rank, so "
                        "rank {} and later ones added there run unpinned\n", bindToName(plan.bindTo), host, added);
      }
      return std::nullopt;
    }
    return CpuBlock{*block, it->second.blocks()};
  }

  // A new rank's variables: its rank, size, local and cross ranks in the world it first
  // joins (HVD_RANK, RANK, LOCAL_RANK, ...: later worlds change only the runtime's), its
  // worker number (HVD_ELASTIC_WORKER) and, forked here, a GPU of its own.
  std::vector<std::string> rankEnvironment(int worker, const rendezvous::ElasticIdentity& id, const std::string& host,
                                           long long after) {
    RankPlan r = plan.ranks.front();
    r.where = {id.rank, id.size, id.localRank, id.localSize, id.crossRank, id.crossSize, host};
    r.gpus.clear();
    r.gpuSlots.clear();
    r.visibleGpus.clear();
    r.localGpu = 0;
    if (how.ssh == nullptr) giveGpu(worker, r);
    std::vector<std::string> rankEnv = planEnvironment(plan, r);
    rankEnv.insert(rankEnv.end(), how.threadVars.begin(), how.threadVars.end());
    appendRankJobWide(jobWide, rankEnv);
    appendElasticVariables(o, worker, rankEnv);
    rankEnv.push_back("HVD_ELASTIC_AFTER=" + std::to_string(after));
    return rankEnv;
  }

  RankProcess forked(int worker, const rendezvous::ElasticIdentity& id, long long after) {
    const std::string& host = plan.ranks.front().where.host;
    std::vector<std::string> rankEnv = rankEnvironment(worker, id, host, after);
    std::vector<int> pinned;
    if (auto block = cpuBlock(worker, host)) {
      auto usable = usableCpuTopology();
      auto bindings = usable ? cpuBindings(plan.bindTo, block->of, *usable)
                             : Result<std::vector<std::vector<int>>>(usable.status());
      if (bindings) {
        pinned = (*bindings)[static_cast<size_t>(block->index)];
      } else {
        printTo(stderr, "hvdrun: warning: rank {} added here runs unpinned: {}\n", worker, bindings.status().message());
      }
    }
    // As for the plan's ranks: TensorFlow on one CPU needs two inter-op threads.
    const int cpus = pinned.empty() ? static_cast<int>(affinityCpus().size()) : static_cast<int>(pinned.size());
    if (auto var = interOpThreadsVariable(cpus, [](const std::string& name) { return std::getenv(name.c_str()); })) {
      rankEnv.push_back(*var);
    }
    return {.rank = worker, .host = host, .executable = how.executable, .argv = o.program,
            .env = inheritedEnvironment(rankEnv), .emptyStdin = true, .cpus = pinned};
  }

  // One new host agent for `workers` on `host` (launchOverSsh's, with no stdin rank).
  RankProcess agent(const std::string& host, const std::vector<int>& workers,
                    const std::map<int, rendezvous::ElasticIdentity>& identity, long long after) {
    std::error_code ec;
    AgentJob job{agentVersion(), host, std::filesystem::current_path(ec).string(), how.shmPrefix, o.killGrace,
                 o.maxLineBytes, std::nullopt, BindTo::kNone, std::nullopt, std::nullopt, {}};
    for (int worker : workers) {
      auto rankEnv = rankEnvironment(worker, identity.at(worker), host, after);
      std::vector<std::string> env = remoteEnvironment(inheritedEnvironment(rankEnv));
      // Not hvdrun's own CUDA_VISIBLE_DEVICES, a list of this machine's devices (a login
      // node's, a Slurm step's): the rank sees its host's.
      if (!o.noGpu && !isThisMachine(host)) env = withoutGpuVariables(std::move(env));
      job.ranks.push_back({worker, o.program, std::move(env), true, gpuPositions(worker, host), cpuBlock(worker, host)});
      // The agent pins ranks with a block to it, and the others of this job not at all.
      if (job.ranks.back().cpuBlock) job.bindTo = plan.bindTo;
    }
    RankProcess process;
    process.rank = workers.front();
    process.host = host;
    process.agentRanks = workers;
    if (isThisMachine(host)) {
      process.executable = thisExecutable();
      process.argv = {process.executable, "host-agent"};
    } else {
      process.executable = how.ssh->client;
      process.argv = sshArgv(how.ssh->ssh, host, agentCommandLine(how.ssh->remoteHvdrun));
    }
    process.env = inheritedEnvironment({});
    process.agentInput = encodeAgentJob(job);
    return process;
  }
};

// An elastic job's supervision (--min-np): its world, published before any rank starts and
// asked each time a rank ends; with a discovery script, the hosts and the ranks it adds. A
// script that fails before the launch stops it (exit 3). Lives as long as the supervision.
struct ElasticSupervision {
  std::optional<ElasticWorld> world;
  std::unique_ptr<HostDiscovery> discovery;
  std::optional<JobGrowth> growth;

  void start(const Options& o, const Plan& plan, const std::vector<std::string>& jobWide, RendezvousServer* server,
             SupervisorOptions& supervision, GrowthLaunch how) {
    superviseElastic(o, plan, server, world, supervision);
    if (!world || o.hostDiscoveryScript.empty()) return;
    auto started = HostDiscovery::start(o.hostDiscoveryScript, o.slotsPerHost, std::chrono::seconds(1));
    if (!started) throw UserError(ExitCode::kEnvironment, started.status().message(), started.status().hint());
    discovery = std::move(*started);
    growth.emplace(JobGrowth{o, plan, jobWide, *world, *server, *discovery, std::move(how), {}, {}});
    growth->discoveredSlots();  // the hosts of the answer before the launch count as listed
    // A launch host the script does not name (-H node01 where it says node01.cluster) is
    // never grown or shrunk, and would be taken for another host if named later.
    std::map<std::string, std::vector<int>> unnamed;
    for (const RankPlan& r : plan.ranks) {
      if (!growth->listed.count(r.where.host)) unnamed[r.where.host].push_back(r.where.rank);
    }
    for (const auto& [host, ranks] : unnamed) {
      printTo(stderr, "hvdrun: warning: the host discovery script does not name {}, where rank(s) {} start: hvdrun "
                      "neither adds ranks there nor stops them when the script's answer changes (name it as the "
                      "script does, in -H or the hostfile)\n", host, rankListText(ranks, 32));
    }
    supervision.changeRanks = [this] {
      SupervisorOptions::RankChanges changes;
      changes.stop = growth->fewer();
      if (changes.stop.empty()) changes.start = growth->more();
      return changes;
    };
    supervision.rankEnded = [this, ended = supervision.rankEnded](const std::vector<int>& ranks,
                                                                  const RankFailure* failure) {
      if (failure != nullptr) growth->rankFailed(failure->host);
      return ended(ranks, failure);
    };
  }
};

// This machine only: hvdrun forks every rank itself.
JobOutcome launchLocally(const Options& o, const Plan& plan, const std::string& executable,
                         const std::vector<std::string>& jobWide, RendezvousServer* server,
                         const PreemptionFlag& preemption, Guardian* guardian, const TorchErrorFiles* errorFiles) {
  throwIfError(checkDescriptorRoom(plan.ranks.size(), !o.outputDir.empty()));
  const auto bindings = localCpuBindings(plan.bindTo, static_cast<int>(plan.ranks.size()));
  // Every rank here shares this process's CPUs (thread_defaults.h).
  const int usable = usableCpuCount();
  const int threads = defaultThreadsPerRank(usable, static_cast<int>(plan.ranks.size()), std::nullopt);
  const std::vector<std::string> threadVars =
      threadVariables(threads, [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; });
  if (!threadVars.empty() && plan.ranks.size() > 1 && plan.restartCount == 0) {  // said once, not at each restart
    printTo(stderr, "hvdrun: {} ranks share {} CPU(s): OMP_NUM_THREADS={} for each (set OMP_NUM_THREADS to choose)\n",
               plan.ranks.size(), usable, threads);
  }
  const int ownCpus = static_cast<int>(affinityCpus().size());  // an unpinned rank's, inherited
  std::vector<RankProcess> ranks;
  for (const RankPlan& r : plan.ranks) {
    std::vector<std::string> rankEnv = planEnvironment(plan, r);
    rankEnv.insert(rankEnv.end(), threadVars.begin(), threadVars.end());
    const auto& pinned = bindings[static_cast<size_t>(r.where.localRank)];
    if (auto var = interOpThreadsVariable(pinned.empty() ? ownCpus : static_cast<int>(pinned.size()),
                                          [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; })) {
      rankEnv.push_back(*var);
    }
    if (errorFiles != nullptr) rankEnv.push_back("TORCHELASTIC_ERROR_FILE=" + errorFiles->path(r.where.rank));
    appendElasticVariables(o, r.where.rank, rankEnv);
    appendRankJobWide(jobWide, rankEnv);
    ranks.push_back({.rank = r.where.rank,
                     .host = r.where.host,
                     .executable = executable,
                     .argv = o.program,
                     .env = inheritedEnvironment(rankEnv),
                     .emptyStdin = o.stdinRank != r.where.rank,
                     .cpus = pinned});
  }
  SupervisorOptions supervision = supervisionFor(o, plan, server, SupervisorOptions::Labels::kNone, preemption);
  if (guardian != nullptr) supervision.onRankStarted = [guardian](int pid) { guardian->watch(pid); };
  ElasticSupervision elastic;
  elastic.start(o, plan, jobWide, server, supervision, {.executable = executable, .threadVars = threadVars});
  supervision.coordinatorRank = parameterServerChief(plan);
  (void)adoptOrphans();  // best effort: without it a daemon outlives the job, as it did before
  auto outcome = superviseRanks(ranks, supervision);
  stopLeftovers(guardian != nullptr ? guardian->pid() : 0, o.killGrace);
  if (guardian != nullptr) guardian->release();  // every rank was reaped and its group killed
  return valueOrThrow(std::move(outcome));
}

// How long every host has to answer an ssh launch's connection (--start-timeout, or 30 s).
std::chrono::milliseconds sshCheckTimeout(const Options& o) {
  return o.startTimeout.count() > 0 ? o.startTimeout : std::chrono::milliseconds(30000);
}

// Whether the plan puts ranks on hosts other than this one (outside Slurm: ssh's job).
bool ranksElsewhere(const Plan& plan) {
  return std::any_of(plan.hosts.begin(), plan.hosts.end(), [](const HostPlan& h) { return h.ranks > 0 && !h.local; });
}

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
    // The first other host this machine can route to; when none resolves, ssh cannot
    // reach any either, and the hosts' table will say so.
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

// Every host asked at once; any that cannot answer fails the launch with the hosts' table,
// as the launch's own check of the hosts would.
std::map<std::string, HostCounts> countHostsForPlan(const Options& o, const std::vector<std::string>& hosts) {
  const SshLaunch launch = sshLaunchFor(o);
  HostCountsAnswer answer = countHostsOverSsh(launch.ssh, launch.client, launch.remoteHvdrun, hosts);
  if (!answer.problems.empty()) {
    std::string table = renderHostProblems(answer.problems, hosts.size());
    if (!table.empty() && table.back() == '\n') table.pop_back();
    throw UserError(ExitCode::kEnvironment, table);
  }
  return answer.counts;
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
JobOutcome launchOverSsh(const Options& o, const Plan& plan, const SshLaunch& launch,
                         const std::vector<std::string>& jobWide, RendezvousServer* server,
                         const PreemptionFlag& preemption, const std::string& shmPrefix) {
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
    jobs.push_back({agentVersion(), h.host, cwd, shmPrefix, o.killGrace, o.maxLineBytes, parameterServerChief(plan),
                    plan.bindTo, std::nullopt, agentDecidesGpus(o, h) ? std::optional<GpuRule>(gpuRule(o)) : std::nullopt,
                    {}});
    jobHosts.push_back(&h);
  }
  for (const RankPlan& r : plan.ranks) {
    std::vector<std::string> rankEnv = planEnvironment(plan, r);
    appendRankJobWide(jobWide, rankEnv);
    appendElasticVariables(o, r.where.rank, rankEnv);
    // The secret travels in the job, over ssh's stdin: never on a command line.
    AgentJob& job = jobs[jobOf.at(r.where.host)];
    std::vector<std::string> env = remoteEnvironment(inheritedEnvironment(rankEnv));
    if (job.gpus) env = withoutGpuVariables(std::move(env));  // the agent sets the host's
    job.ranks.push_back({r.where.rank, o.program, std::move(env), usesGpu(r.role)});
    if (o.stdinRank == r.where.rank) job.stdinRank = r.where.rank;
  }
  std::vector<RankProcess> agents;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const HostPlan& h = *jobHosts[i];
    const AgentJob& job = jobs[i];
    RankProcess agent;
    agent.rank = job.ranks.front().rank;
    agent.host = h.host;
    for (const AgentRank& r : job.ranks) agent.agentRanks.push_back(r.rank);
    if (h.local) {
      agent.executable = thisExecutable();
      agent.argv = {agent.executable, "host-agent"};
    } else {
      agent.executable = launch.client;
      agent.argv = sshArgv(launch.ssh, h.host, agentCommandLine(launch.remoteHvdrun));
    }
    agent.env = inheritedEnvironment({});
    agent.agentInput = encodeAgentJob(job);
    agents.push_back(std::move(agent));
  }
  SupervisorOptions supervision = supervisionFor(o, plan, server, SupervisorOptions::Labels::kAgents, preemption);
  supervision.agentVersion = agentVersion();
  supervision.agentHelloTimeout = launch.ssh.connectTimeout;
  // hvdrun's stdin goes to its rank over that rank's agent connection, as mpirun's does.
  if (o.stdinRank) supervision.stdinForwarding = SupervisorOptions::StdinForwarding{STDIN_FILENO, *o.stdinRank};
  ElasticSupervision elastic;
  elastic.start(o, plan, jobWide, server, supervision, {.ssh = &launch, .shmPrefix = shmPrefix});
  JobOutcome result = valueOrThrow(superviseRanks(agents, supervision));
  if (!result.agentStartProblems.empty()) throwHostProblems(result, agents, launch, launch.ssh.connectTimeout);
  // The supervisor counted agents; the summary counts ranks.
  if (result.interruptSignal != 0 || result.ranksStoppedAfterPreemption > 0) {
    result.ranksStopped = static_cast<int>(plan.ranks.size());
  } else if (result.firstFailure) {
    result.ranksStopped = static_cast<int>(plan.ranks.size()) - 1;
  }
  adoptCoordinatorEnd(result, server);
  return result;
}

// --timeline-filename: the ranks wrote one trace each (runtime/timeline/trace_files.h); one
// file with a track per rank is what a user opens. A failed merge leaves the per-rank files
// and says so, without changing the job's exit code.
void mergeTimeline(const std::string& path, int ranks) {
  std::vector<std::string> traces = timeline::existingRankTraces(path, ranks);
  if (traces.empty()) {
    printTo(stderr, "hvdrun: warning: no rank wrote a timeline to {} (did the program call hvd::init()?)\n", path);
    return;
  }
  if (Status s = timeline::mergeTraces(traces, path); !s.isOk()) {
    printTo(stderr, "hvdrun: warning: the ranks' timelines stay in separate files: {}\n", s.message());
    return;
  }
  for (size_t i = 1; i < traces.size(); ++i) std::remove(traces[i].c_str());
}

// --max-restarts: the traces of a start that failed, merged aside before the next start's
// ranks write the same files again (they were lost, and with them the failure they show).
void keepStartTimeline(const std::string& path, int ranks, int start, int starts, std::string& summaries) {
  std::vector<std::string> traces = timeline::existingRankTraces(path, ranks);
  if (traces.empty()) return;
  const std::string kept = timeline::attemptTracePath(path, start);
  if (Status s = timeline::mergeTraces(traces, kept); !s.isOk()) {
    printTo(stderr, "hvdrun: warning: the timeline of start {} of {} is lost to the next start: {}\n", start + 1,
            starts, s.message());
    return;
  }
  for (const std::string& trace : traces) std::remove(trace.c_str());
  std::string line = fmt::format("hvdrun: the timeline of start {} of {} is in {}\n", start + 1, starts, kept);
  printTo(stderr, "{}", line);
  summaries += line;
}

// --stdin names a rank of this job.
void checkStdinRank(const Options& o, const Plan& plan) {
  const int ranks = static_cast<int>(plan.ranks.size());
  if (o.stdinRank && *o.stdinRank >= ranks) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--stdin {}: the job has {} ranks (0-{})", *o.stdinRank, ranks, ranks - 1),
                    "name one of the job's ranks, or none");
  }
}

// --ranks-filter names at least one rank of this job: one that names none showed nothing at
// all on the console, as if every rank were silent. Ranks past the job's end are allowed
// beside one in it, so one filter serves jobs of different sizes.
void checkRanksFilter(const Options& o, const Plan& plan) {
  const int ranks = static_cast<int>(plan.ranks.size());
  if (o.ranksFilter.empty() || *o.ranksFilter.begin() < ranks) return;
  throw UserError(ExitCode::kUsage,
                  fmt::format("--ranks-filter names no rank of this job, which has {} ranks (0-{})", ranks, ranks - 1),
                  "name at least one of the job's ranks; --output-filename keeps every rank's output in files");
}

// --timeline-filename: the ranks write their traces beside it and hvdrun merges them into
// it, replacing it. Checked before anything starts: a directory that is not there failed
// every rank at init, and a device (/dev/null) was replaced by a regular file.
void checkTimelinePath(const Options& o) {
  if (o.timelineFile.empty()) return;
  const std::string& path = o.timelineFile;
  auto refuse = [&](const std::string& why, const std::string& hint) {
    throw UserError(ExitCode::kUsage, "--timeline-filename " + path + ": " + why, hint);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse("is a directory", "name the file the merged trace goes to");
    if (!S_ISREG(st.st_mode)) {
      refuse("not a regular file (a device, pipe or socket); hvdrun merges the ranks' traces into a file it replaces",
             "name a file; leave the option out for no timeline");
    }
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    refuse("there is no directory " + dir, "create it first, or name a file in a directory that exists");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    refuse("cannot write in " + dir + ": " + std::strerror(errno), "name a file in a directory you may write");
  }
}

// Whether --max-restarts may start the job again after this outcome: a rank failed, and
// neither the user (Ctrl-C, a signal to hvdrun), a preemption notice nor a console gone away
// (its reader quit) ended the job, which a restart would only repeat or go against.
// --min-np: hvdrun must hear of each rank's end (forked, its host agents', or the srun
// task shims' reports) while the others go on (elastic_options.h), and there must be that
// many ranks.
void checkElastic(const Options& o, const Plan& plan) {
  checkElasticLaunch(o, plan.source == HostSource::kSlurm);
  if (o.minNp == 0) return;
  if (o.maxNp > 0 && o.maxNp < static_cast<int>(plan.ranks.size())) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--max-np {} is less than the job's {} rank(s)", o.maxNp, plan.ranks.size()),
                    "give -np at most --max-np");
  }
  if (!o.timelineFile.empty()) {
    throw UserError(ExitCode::kUsage,
                    "--timeline-filename and --min-np: each rank's trace is named by its rank, which passes to "
                    "another process when an elastic job's world re-forms",
                    "leave out one of them (a fixed job's timeline shows the same collectives)");
  }
  if (o.minNp > static_cast<int>(plan.ranks.size())) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--min-np {} is more than the job's {} rank(s)", o.minNp, plan.ranks.size()),
                    "give -np at least --min-np");
  }
}

bool restartable(const JobOutcome& outcome) {
  return outcome.exitCode != 0 && outcome.firstFailure.has_value() && outcome.interruptSignal == 0 &&
         !outcome.preempted && outcome.consoleClosed.empty() && outcome.agentStartProblems.empty();
}

int launch(const Options& o, Plan plan, const slurm::Environment& env) {
  auto exe = findExecutable(o.program.front(), searchPath());
  if (!exe) {
    // torchrun runs `torchrun train.py` with Python itself; here, as under horovodrun, the
    // interpreter comes first.
    const std::string& program = o.program.front();
    const bool script = program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
    std::vector<std::string> withPython{"python"};
    withPython.insert(withPython.end(), o.program.begin(), o.program.end());
    throw UserError(ExitCode::kEnvironment, "cannot run the program: " + exe.status().message(),
                    script ? "nothing was started; a Python script runs with its interpreter first, as under "
                             "horovodrun: hvdrun [options] " + shellJoin(withPython)
                           : "nothing was started; check the program's name, PATH and its execute permission");
  }
  if (auto problem = interpreterProblem(*exe)) {
    throw UserError(ExitCode::kEnvironment, "cannot run the program: " + *exe + ": " + *problem,
                    "nothing was started; mend the script's first line (dos2unix for Windows line ends), or put "
                    "its interpreter before it on hvdrun's command line");
  }
  // The job's secret: in the ranks' environment only, never on a command line or in a plan.
  std::string secretValue = valueOrThrow(randomHex(32));
  std::string secret = "HVD_SECRET_KEY=" + secretValue;
  const std::string shmPrefix = shmJobPrefix(secretValue);
  // Ranks hvdrun forks itself need something that outlives hvdrun (guardian.h); srun's and
  // mpirun's ranks have Slurm and Open MPI. Forked before the rendezvous server's threads.
  const bool overSsh = !o.useMpi && plan.source != HostSource::kSlurm && ranksElsewhere(plan);
  const bool forksRanks = !o.useMpi && plan.source != HostSource::kSlurm && !overSsh;
  checkStdinRank(o, plan);
  checkRanksFilter(o, plan);
  checkElastic(o, plan);
  checkTimelinePath(o);
  std::optional<SshLaunch> ssh;
  if (overSsh) ssh = sshLaunchFor(o);
  std::optional<Guardian> guardian;
  if (forksRanks) guardian.emplace(valueOrThrow(Guardian::start(shmPrefix)));
  // torch's @record writes a failing rank's exception here (torch_error_file.h); a path
  // the user gave is theirs to read.
  std::optional<TorchErrorFiles> errorFiles;  // removed at the end, also when the launch throws
  if (forksRanks && std::getenv("TORCHELASTIC_ERROR_FILE") == nullptr) {
    errorFiles.emplace();
    if (errorFiles->path(0).empty()) errorFiles.reset();  // no directory could be made: no files
  }
  if (overSsh) plan.rendezvousAddr = rendezvousAddressForSsh(o, plan);
  PreemptionFlag preemption(o, env);
  std::unique_ptr<RendezvousServer> server;
  JobOutcome outcome;
  bool toldByRanks = false;
  std::string summaries;  // every start's report, for --output-filename's summary
  for (;; ++plan.restartCount) {
    server.reset();  // the last start's, before the next one listens
    server = startRendezvous(plan, secretValue);
    std::vector<std::string> jobWide = {"MASTER_PORT=" + std::to_string(plan.masterPort),
                                        "HVD_RENDEZVOUS_ADDR=" + plan.rendezvousAddr,
                                        "HVD_RENDEZVOUS_PORT=" + std::to_string(plan.rendezvousPort), secret};
    for (const std::string& kv : preemption.environment()) jobWide.push_back(kv);
    // srun's and mpirun's shims rebuild the plan on each node without the engine options
    // or hvdrun's restarts: the ranks there inherit these instead.
    if (o.useMpi || plan.source == HostSource::kSlurm) {
      jobWide.insert(jobWide.end(), o.runtimeVariables.begin(), o.runtimeVariables.end());
      if (o.minNp > 0) jobWide.push_back("HVD_ELASTIC=1");  // the shims give each rank its worker number
      if (o.elasticTimeout > 0) jobWide.push_back("HVD_ELASTIC_TIMEOUT=" + std::to_string(o.elasticTimeout));
      jobWide.push_back("TORCHELASTIC_RESTART_COUNT=" + std::to_string(plan.restartCount));
      jobWide.push_back("TORCHELASTIC_MAX_RESTARTS=" + std::to_string(plan.maxRestarts));
    }
    const std::optional<std::uint64_t> oomKillsBefore = forksRanks ? kernelOomKills() : std::nullopt;
    outcome = o.useMpi ? launchWithMpirun(o, plan, jobWide, server.get(), preemption)
              : plan.source == HostSource::kSlurm
                  ? launchWithSrun(o, plan, jobWide, env, server.get(), preemption)
              : ssh ? launchOverSsh(o, plan, *ssh, jobWide, server.get(), preemption, shmPrefix)
                  : launchLocally(o, plan, *exe, jobWide, server.get(), preemption, guardian ? &*guardian : nullptr,
                                  errorFiles ? &*errorFiles : nullptr);
    if (oomKillsBefore.has_value() && outcome.firstFailure) {
      const std::uint64_t before = *oomKillsBefore;
      if (auto after = kernelOomKills(); after && *after > before) {
        outcome.firstFailure->oomKillsOnHost = *after - before;
      }
    }
    // What ranks killed mid-set-up left in this machine's /dev/shm (nothing uses it now).
    removeShmObjects(shmPrefix);
    // A notice sent to the ranks directly (scancel --signal=USR2) reaches hvdrun this way.
    toldByRanks = !outcome.preempted && server->value(rendezvous::kPreemptedKey);
    outcome.preempted |= toldByRanks;
    std::string summary = reportText(outcome, static_cast<int>(plan.ranks.size()),
                                     recordedError(outcome, errorFiles ? &*errorFiles : nullptr, *server));
    printTo(stderr, "{}", summary);
    summaries += summary;
    if (!restartable(outcome)) break;
    if (plan.restartCount >= plan.maxRestarts) {
      if (plan.maxRestarts > 0) {
        std::string end = fmt::format("hvdrun: the job failed in each of its {} starts (--max-restarts {})\n",
                                      plan.maxRestarts + 1, plan.maxRestarts);
        printTo(stderr, "{}", end);
        summaries += end;
      }
      break;
    }
    if (!o.timelineFile.empty()) {
      keepStartTimeline(o.timelineFile, static_cast<int>(plan.ranks.size()), plan.restartCount, plan.maxRestarts + 1,
                        summaries);
    }
    std::string restart = fmt::format("hvdrun: starting every rank again: restart {} of {} (--max-restarts)\n",
                                      plan.restartCount + 1, plan.maxRestarts);
    printTo(stderr, "{}", restart);
    summaries += restart;
    // A fresh directory: a file the failed start's rank wrote must not be taken for the next one's.
    if (errorFiles) {
      errorFiles.reset();
      errorFiles.emplace();
      if (errorFiles->path(0).empty()) errorFiles.reset();
    }
  }
  if (!o.timelineFile.empty()) mergeTimeline(o.timelineFile, static_cast<int>(plan.ranks.size()));
  keepSummary(o.outputDir, summaries);
  finishPreemption(o, outcome, toldByRanks, env);
  if (outcome.incompleteOutputFiles > 0) {
    printTo(stderr, "hvdrun: error: {} of the ranks' output files in {} are incomplete ({})\n",
            outcome.incompleteOutputFiles, o.outputDir, outcome.outputProblem);
    // The job's own failure says more; a job that succeeded must still not look complete.
    if (outcome.exitCode == 0) return static_cast<int>(ExitCode::kEnvironment);
  }
  if (!outcome.consoleProblem.empty()) {
    printTo(stderr, "hvdrun: error: the ranks' output is incomplete ({})\n", outcome.consoleProblem);
    if (outcome.exitCode == 0) return static_cast<int>(ExitCode::kEnvironment);
  }
  return outcome.exitCode;
}

// --tf-port-base, or where TF_CONFIG's ports start when it was not given: ports free on
// this machine when every rank runs here, else a base derived from the job (tf_ports.h).
int chooseTfPortBase(const Options& o, const slurm::Environment& env) {
  if (!o.tfConfig || o.tfPortBase > 0) return o.tfPortBase;
  auto job = env.find("SLURM_JOB_ID");
  bool onlyHere = o.hosts.empty() && o.hostfile.empty() && (o.noSlurm || job == env.end());
  if (onlyHere) {
    int ranks = o.numProc > 0        ? o.numProc
                : o.ranksPerHost > 0 ? o.ranksPerHost
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (auto base = freeTcpPortBlock(ranks)) return *base;
  }
  // Outside this node's ephemeral range; other nodes are taken to have the same.
  PortRange ephemeral = kLinuxEphemeralPorts;
  if (auto range = ephemeralPortRange()) ephemeral = {range->first, range->second};
  return derivedTfPortBase(job != env.end() ? job->second : "", static_cast<unsigned>(::getpid()), ephemeral);
}

// TensorFlow's servers would fail later, and obscurely, on a taken port: say so now.
void requireFreeTfPorts(const Plan& plan) {
  if (!plan.tfConfig) return;
  const std::string here = hostName();
  for (const RankPlan& rank : plan.ranks) {
    if (rank.where.host != here || tcpPortFree(rank.tfPort)) continue;
    throw UserError(ExitCode::kEnvironment,
                    fmt::format("TF_CONFIG port {} (rank {}'s, on {}) is in use", rank.tfPort, rank.where.rank, here),
                    "another job or process holds it; choose another --tf-port-base, or leave the flag out and "
                    "hvdrun picks free ports");
  }
}

int planOrLaunch(const Options& given) {
  Options o = given;
  takeSbatchOptionsInLaunch(o);
  for (const std::string& note : o.notes) printTo(stderr, "hvdrun: note: {}\n", note);
  // -x: hvdrun's own environment first, so what it derives from it (OMP_NUM_THREADS's
  // default for shared CPUs, the environment every rank inherits) sees the value.
  for (const std::string& kv : o.exportedVariables) {
    const size_t eq = kv.find('=');
    ::setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
  }
  slurm::Environment env = slurm::environmentFrom(environ);
  o.tfPortBase = chooseTfPortBase(o, env);
  std::optional<PlanFormat> format;
  if (o.dryRun) format = valueOrThrow(parsePlanFormat(o.format));
  if (!o.dryRun && o.program.empty()) {
    throw UserError(ExitCode::kUsage, "no program to run",
                    "usage: hvdrun -np N program [args...]; see 'hvdrun --help'");
  }
  Plan plan = makePlan(o, env);
  requireFreeTfPorts(plan);
  // horovodrun's rule: a job that discovers hosts is elastic, at least -np ranks by default.
  if (!o.hostDiscoveryScript.empty() && o.minNp == 0) o.minNp = static_cast<int>(plan.ranks.size());
  if (o.dryRun) {
    printTo(stdout, "{}", valueOrThrow(renderPlan(plan, *format, o.rank, o.program)));
    return 0;
  }
  return launch(o, plan, env);
}

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Subcommands are recognised only as the first word, so a program named like one can
  // still be launched as ./hostlist or after an option (hvdrun -np 2 hostlist).
  if (!args.empty() && args[0] == "hostlist") return runHostlistCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "timeline") return runTimelineCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "sbatch") return runSbatchCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "exec-rank") return runExecRankCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "host-agent") return runHostAgentCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "plan") {
    Options o = parseWithSettings({args.begin() + 1, args.end()});
    if (o.help) {
      printTo(stdout, "{}", o.helpText);
      return 0;
    }
    o.dryRun = true;
    return planOrLaunch(o);
  }
  Options o = parseWithSettings(args);
  if (o.help) {
    printTo(stdout, "{}", o.helpText);
    return 0;
  }
  if (o.showVersion) {
    printTo(stdout, "{}", versionText());
    return 0;
  }
  if (o.checkBuild) {
    printTo(stdout, "{}", renderBuildReport(collectBuildReport(), o.verbose));
    return 0;
  }
  return planOrLaunch(o);
}

}  // namespace hvd::cli
