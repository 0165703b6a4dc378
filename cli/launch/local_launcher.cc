// cli/launch/local_launcher.cc: hvdrun forks every rank itself.
#include "cli/launch/local_launcher.h"

#include <cstdlib>
#include <optional>

#include "cli/elastic/elastic_supervision.h"
#include "cli/elastic/job_growth.h"
#include "cli/os/adopted_orphans.h"
#include "cli/os/console.h"
#include "cli/os/cpu_topology.h"
#include "cli/os/machine.h"
#include "cli/os/oom_kills.h"
#include "cli/plan/cpu_binding.h"
#include "cli/plan/thread_defaults.h"
#include "cli/supervise/guardian.h"
#include "cli/supervise/process_supervisor.h"
#include "cli/supervise/spawn.h"
#include "cli/user_error.h"
#include "runtime/common/cpu_budget.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

bool userSet(const std::string& name) { return std::getenv(name.c_str()) != nullptr; }

// --bind-to for `localRanks` ranks hvdrun forks on this machine: each one's CPUs.
std::vector<std::vector<int>> localCpuBindings(BindTo bind, int localRanks) {
  if (bind == BindTo::kNone) return std::vector<std::vector<int>>(static_cast<size_t>(localRanks));
  auto usable = usableCpuTopology();
  if (!usable) throw UserError(ExitCode::kEnvironment, "--bind-to: " + usable.status().message());
  auto bindings = cpuBindings(bind, localRanks, *usable);
  if (!bindings) throw UserError(ExitCode::kUsage, bindings.status().message(), bindings.status().hint());
  return *bindings;
}

class LocalLauncher final : public Launcher, public RankAdder {
 public:
  LocalLauncher(const Options& o, std::string executable) : o_(o), executable_(std::move(executable)) {}
  // A launch that threw (ranks may be running) leaves the guardian unreleased: it acts.
  ~LocalLauncher() override {
    if (guardian_ && endedCleanly_) guardian_->release();
  }

  std::string_view name() const override { return "local"; }
  RankStarter starter() const override { return RankStarter::kHvdrun; }

  // Ranks hvdrun forks itself need something that outlives hvdrun (guardian.h): forked
  // before the rendezvous server's threads.
  void prepare(Plan&, const std::string& shmPrefix) override {
    guardian_.emplace(valueOrThrow(Guardian::start(shmPrefix)));
    // torch's @record writes a failing rank's exception here (torch_error_file.h); a path the
    // user gave is theirs to read.
    if (std::getenv(std::string(rank_contract::kTorchErrorFile).c_str()) == nullptr) freshErrorFiles();
  }

  JobOutcome start(JobStart& s) override {
    // A fresh directory at each restart: a file the failed start's rank wrote must not be
    // taken for the next one's.
    if (s.plan.restartCount > 0 && errorFiles_) freshErrorFiles();
    const std::optional<std::uint64_t> oomKillsBefore = kernelOomKills();
    JobOutcome outcome = launch(s);
    if (oomKillsBefore.has_value() && outcome.firstFailure) {
      if (auto after = kernelOomKills(); after && *after > *oomKillsBefore) {
        outcome.firstFailure->oomKillsOnHost = *after - *oomKillsBefore;
      }
    }
    return outcome;
  }

  std::optional<RecordedError> recordedError(const JobOutcome& outcome, const RendezvousServer& server) const override {
    if (!errorFiles_) return Launcher::recordedError(outcome, server);
    if (!outcome.firstFailure) return std::nullopt;
    return readTorchErrorFile(errorFiles_->path(outcome.firstFailure->rank));
  }

  // RankAdder: ranks an elastic job adds are forked here like the first ones.
  bool overSsh() const override { return false; }
  RankProcess forkHere(const std::string& host, AddedRank rank, std::vector<int> cpus) override {
    // As for the plan's ranks: TensorFlow on one CPU needs two inter-op threads.
    const int rankCpus = cpus.empty() ? static_cast<int>(affinityCpus().size()) : static_cast<int>(cpus.size());
    rank.env.threads(localThreadVariables(threadVars_, rankCpus));
    if (errorFiles_) rank.env.errorFile(errorFiles_->path(rank.worker));
    return {.rank = rank.worker, .host = host, .executable = executable_, .argv = o_.program,
            .env = rank.env.over(processEnvironment()), .emptyStdin = true, .cpus = std::move(cpus)};
  }
  RankProcess startAgent(const std::string& host, bool, std::vector<AddedRank> ranks) override {
    return forkHere(host, std::move(ranks.front()), {});  // never asked: this launch grows here only
  }

 private:
  void freshErrorFiles() {
    errorFiles_.reset();
    errorFiles_.emplace();
    if (errorFiles_->path(0).empty()) errorFiles_.reset();  // no directory could be made: no files
    if (errorFiles_ && guardian_) guardian_->removeIfOrphaned(errorFiles_->directory());
  }

  JobOutcome launch(JobStart& s) {
    endedCleanly_ = false;
    const Plan& plan = s.plan;
    throwIfError(checkDescriptorRoom(plan.ranks.size(), !o_.outputDir.empty()));
    const auto bindings = localCpuBindings(plan.bindTo, static_cast<int>(plan.ranks.size()));
    // Every rank here shares this process's CPUs (thread_defaults.h).
    const int usable = usableCpuCount();
    const int threads = defaultThreadsPerRank(usable, static_cast<int>(plan.ranks.size()), std::nullopt);
    threadVars_ = threadVariables(threads, userSet);
    if (!threadVars_.empty() && plan.ranks.size() > 1 && plan.restartCount == 0) {  // said once, not at each restart
      printTo(stderr, "hvdrun: {} ranks share {} CPU(s): OMP_NUM_THREADS={} for each (set OMP_NUM_THREADS to choose)\n",
              plan.ranks.size(), usable, threads);
    }
    const int ownCpus = static_cast<int>(affinityCpus().size());  // an unpinned rank's, inherited
    const std::vector<std::string> inherited = processEnvironment();
    std::vector<RankProcess> ranks;
    for (const RankPlan& r : plan.ranks) {
      const auto& pinned = bindings[static_cast<size_t>(r.where.localRank)];
      const int rankCpus = pinned.empty() ? ownCpus : static_cast<int>(pinned.size());
      RankEnvironment env = localRankEnvironment(o_, plan, r, s.job, localThreadVariables(threadVars_, rankCpus),
                                                 errorFiles_ ? errorFiles_->path(r.where.rank) : "");
      ranks.push_back({.rank = r.where.rank,
                       .host = r.where.host,
                       .executable = executable_,
                       .argv = o_.program,
                       .env = env.over(inherited),
                       .emptyStdin = o_.stdinRank != r.where.rank,
                       .cpus = pinned});
    }
    SupervisorOptions supervision = s.supervision();
    supervision.processes = SupervisorOptions::Processes::kRanks;
    Guardian* guardian = guardian_ ? &*guardian_ : nullptr;
    if (guardian != nullptr) supervision.onRankStarted = [guardian](int pid) { guardian->watch(pid); };
    ElasticSupervision elastic;
    elastic.start(o_, plan, s.job, &s.server, supervision, this);
    supervision.coordinatorRank = parameterServerChief(plan);
    (void)adoptOrphans();  // best effort: without it a daemon outlives the job
    auto outcome = superviseRanks(ranks, supervision);
    // Once the ranks are gone: what they left running outside their sessions
    // (adopted_orphans.h) is stopped, and hvdrun says so.
    auto stopped = stopAdoptedOrphans({guardian != nullptr ? guardian->pid() : 0}, o_.killGrace);
    if (!stopped.empty()) printTo(stderr, "{}", stoppedOrphansLine(stopped, ""));
    // Every rank was reaped and its group killed; the guardian stays for a restart's ranks
    // and leaves with the launcher.
    if (guardian != nullptr) guardian->forget();
    endedCleanly_ = true;
    return valueOrThrow(std::move(outcome));
  }

  const Options& o_;
  std::string executable_;
  std::optional<Guardian> guardian_;
  bool endedCleanly_ = false;  // the last launch returned: its ranks were all reaped
  std::optional<TorchErrorFiles> errorFiles_;  // removed at the end, also when the launch throws
  std::vector<std::string> threadVars_;        // the math libraries' threads, the same for every rank here
};

}  // namespace

std::unique_ptr<Launcher> makeLocalLauncher(const Options& options, std::string executable) {
  return std::make_unique<LocalLauncher>(options, std::move(executable));
}

std::vector<std::string> localThreadVariables(const std::vector<std::string>& threadVars, int rankCpus) {
  std::vector<std::string> vars = threadVars;
  if (auto var = interOpThreadsVariable(rankCpus, userSet)) vars.push_back(*var);
  return vars;
}

RankEnvironment localRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                     std::vector<std::string> threads, const std::string& errorFile) {
  RankEnvironment env = RankEnvironment::fromPlan(plan, rank);
  env.job(job);
  if (auto elastic = elasticVariables(o, rank.where.rank)) env.elastic(*elastic);
  env.threads(std::move(threads));
  env.errorFile(errorFile);
  return env;
}

}  // namespace hvd::cli
