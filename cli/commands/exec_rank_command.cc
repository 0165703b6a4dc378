// cli/commands/exec_rank_command.cc: the task shim.
#include "cli/commands/exec_rank_command.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "cli/launch/task_shim.h"
#include "cli/options/options.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"
#include "cli/plan/plan.h"
#include "cli/plan/plan_output.h"
#include "cli/plan/thread_defaults.h"
#include "cli/options/plan_request.h"
#include "cli/user_error.h"
#include "runtime/backends/backend_probe.h"
#include "runtime/common/cpu_budget.h"
#include "runtime/common/rank_contract.h"
#include "runtime/common/shm_names.h"
#include "slurm/allocation.h"
#include "slurm/hostlist.h"

extern char** environ;

namespace hvd::cli {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& hint = "") {
  throw UserError(ExitCode::kEnvironment, "exec-rank: " + what, hint);
}

// The task ends as its rank did, so srun and mpirun report the rank's own code or signal.
int endLikeTheRank(const TaskEnd& end) {
  if (end.signal == 0) return end.exitCode;
  // The rank dumped its core already, if it was going to; the shim's would be noise.
  struct rlimit none {};
  ::setrlimit(RLIMIT_CORE, &none);
  ::signal(end.signal, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, end.signal);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::kill(::getpid(), end.signal);
  return 128 + end.signal;  // a signal whose default is to go on (SIGCHLD, SIGWINCH)
}

}  // namespace

int runExecRankCommand(const std::vector<std::string>& args) {
  Options o = parseOptions(args);
  if (o.program.empty()) fail("no program to run");
  slurm::Environment env = slurm::environmentFrom(environ);
  auto hostsSpec = env.find(std::string(rank_contract::kPlanHosts));
  if (hostsSpec == env.end()) {
    fail(std::string(rank_contract::kPlanHosts) + " is not set", "exec-rank is started by hvdrun's launchers, not by hand");
  }

  // Who am I: Open MPI's identity first (under mpirun SLURM_* are not per rank), then
  // PMIx, then the Slurm step's.
  auto mpi = slurm::mpiIdentityFromEnvironment(env);
  if (!mpi) fail(mpi.status().message());
  int rank = -1, localRank = -1;
  if (*mpi) {
    rank = (*mpi)->rank;
    localRank = (*mpi)->localRank;
  } else if (auto procId = env.find("SLURM_PROCID"); procId != env.end()) {
    rank = std::atoi(procId->second.c_str());
    auto local = env.find("SLURM_LOCALID");
    localRank = local != env.end() ? std::atoi(local->second.c_str()) : -1;
  } else {
    fail("cannot tell this task's rank: no OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID");
  }

  // The same plan as the launcher's, with this node as "this machine".
  PlanRequest request = planRequestFrom(o);
  request.hostList = hostsSpec->second;
  request.hostfilePath.clear();
  request.numProc = 0;
  request.ranksPerHost = 0;  // the hosts' counts above are the plan's ranks; the launcher
  request.ranksPerHostWord.clear();
  request.nnodes = 0;        // checked --nproc-per-node and --nnodes against them
  request.oversubscribeGpus = true;  // the launcher already checked every host's GPUs
  MachineFacts facts;
  auto nodeName = env.find("SLURMD_NODENAME");  // Slurm's name for this node, which the plan uses
  facts.hostname = nodeName != env.end() ? nodeName->second : hostName();
  // Under mpirun this task's CUDA_VISIBLE_DEVICES belongs to another step: the launcher's
  // account of the node's GPUs wins; Slurm's per-task binding counts only under srun.
  bool underMpi = mpi->has_value();
  auto allocation = slurm::allocationFromEnvironment(env);
  // Slurm bound this task's GPUs itself (srun --gpus-per-task): keep them.
  const bool slurmBound = !underMpi && !o.noGpu && allocation && allocation->has_value() &&
                          (*allocation)->gpus.binding == slurm::GpuBinding::kPerTask;
  slurm::Environment planEnv = env;
  if (auto spec = env.find(std::string(rank_contract::kPlanGpus)); spec != env.end()) {
    if (auto devices = devicesFromGpusSpec(spec->second, facts.hostname); devices && !slurmBound) {
      std::string list;
      for (const auto& d : *devices) list += (list.empty() ? "" : ",") + d;
      planEnv[std::string(rank_contract::kCudaVisibleDevices)] = list;
    }
  }
  if (!o.noGpu && !planEnv.count(std::string(rank_contract::kCudaVisibleDevices))) {
    facts.localGpuCount = backends::countLocalGpus();
  }
  auto plan = buildPlan(request, planEnv, facts);
  if (!plan) fail(plan.status().message());
  if (rank < 0 || rank >= static_cast<int>(plan->ranks.size())) {
    fail("rank " + std::to_string(rank) + " is outside the plan's " + std::to_string(plan->ranks.size()) + " ranks");
  }
  const RankPlan& me = plan->ranks[static_cast<size_t>(rank)];
  if (me.where.host != facts.hostname || (localRank >= 0 && localRank != me.where.localRank)) {
    fail("rank " + std::to_string(rank) + " was planned on " + me.where.host + " as local rank " +
             std::to_string(me.where.localRank) + " but started on " + facts.hostname + " as local rank " +
             std::to_string(localRank),
         "the launcher and the scheduler disagree on placement; please report this");
  }

  // The launcher could not probe this node's ports: a clash is caught here, before the
  // program's TensorFlow server fails on it.
  if (plan->tfConfig && !tcpPortFree(me.tfPort)) {
    fail("TF_CONFIG port " + std::to_string(me.tfPort) + " (rank " + std::to_string(rank) + "'s, on " + facts.hostname +
             ") is in use",
         "another job or process holds it; choose another --tf-port-base, or leave the flag out and hvdrun derives "
         "ports from the job");
  }

  // Slurm's per-task binding stands for the ranks the plan gives GPUs; a rank the plan gives
  // none (a TF ps or evaluator) gets none, whatever Slurm bound to its task.
  const bool keepSlurmGpus = slurmBound && !me.hideGpus;
  // Threads: Slurm's --cpus-per-task, else this task's CPUs; shared with the node's other
  // ranks only when Slurm bound none (the task may then run on every CPU of the node).
  std::optional<int> cpusPerTask;
  if (auto c = env.find("SLURM_CPUS_PER_TASK"); c != env.end()) cpusPerTask = std::atoi(c->second.c_str());
  const int usable = usableCpuCount();
  const int sharing = usable >= onlineCpuCount() ? me.where.localSize : 1;
  auto userSet = [&](const std::string& name) { return env.count(name) > 0; };
  std::vector<std::string> threads = threadVariables(defaultThreadsPerRank(usable, sharing, cpusPerTask), userSet);
  // This task's CPUs as srun or mpirun bound them, which the rank keeps.
  if (auto var = interOpThreadsVariable(static_cast<int>(affinityCpus().size()), userSet)) threads.push_back(*var);
  std::vector<std::string> inherited;
  RankEnvironment rankEnv = shimRankEnvironment(*plan, me, env, keepSlurmGpus, std::move(threads), inherited);

  auto exe = findExecutable(o.program.front(), searchPath());
  if (!exe) fail("cannot run the program on " + facts.hostname + ": " + exe.status().message());
  TaskShimJob job;
  job.rank = rank;
  job.host = facts.hostname;
  job.executable = *exe;
  job.argv = o.program;
  job.inherited = std::move(inherited);
  job.env = std::move(rankEnv);
  if (auto secret = job.env.valueOf(rank_contract::kSecretKey)) job.shmPrefix = shmJobPrefix(*secret);
  job.coordinatorRank = parameterServerChief(*plan);
  job.killGrace = o.killGrace;
  auto end = runTaskShim(job);
  if (!end) fail(end.status().message());
  return endLikeTheRank(*end);
}

}  // namespace hvd::cli
