// cli/launch/launcher_test.cc: which launcher a plan gets, and that every path that starts a
// rank gives it the same variables in the same order.
#include "cli/launch/launcher.h"

#include <catch2/catch.hpp>

#include "cli/commands/host_agent_command.h"
#include "cli/elastic/job_growth.h"
#include "cli/launch/local_launcher.h"
#include "cli/launch/ssh_launcher.h"
#include "cli/launch/task_shim.h"
#include "cli/options/options.h"
#include "cli/plan/thread_defaults.h"
#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {
namespace {

MachineFacts hereFacts() {
  MachineFacts f;
  f.hostname = "here";
  f.freePort = 40000;
  f.rendezvousPort = 40001;
  return f;
}

Plan planFor(const PlanRequest& request, const slurm::Environment& env = {}) {
  auto plan = buildPlan(request, env, hereFacts());
  INFO(plan.status().message());
  REQUIRE(plan.isOk());
  return *plan;
}

std::vector<std::string> names(const std::vector<std::string>& variables) {
  std::vector<std::string> out;
  for (const std::string& kv : variables) out.push_back(kv.substr(0, kv.find('=')));
  return out;
}

std::vector<std::string> without(std::vector<std::string> variables, const std::string& name) {
  std::erase_if(variables, [&](const std::string& kv) { return kv.rfind(name + "=", 0) == 0; });
  return variables;
}

}  // namespace

TEST_CASE("chooseLauncher picks mpirun for --mpi, srun inside Slurm, ssh for other hosts, else hvdrun itself",
          "[unit][launch]") {
  Options o;
  o.program = {"/bin/true"};
  PlanRequest here;
  here.numProc = 2;
  here.noSlurm = true;
  PlanRequest elsewhere = here;
  elsewhere.hostList = "here:1,node2:1";
  PlanRequest inSlurm;
  const slurm::Environment slurmJob{{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "node[1-2]"},
                                    {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  struct Case {
    const char* what;
    Plan plan;
    bool mpi;
    std::string_view launcher;
    RankStarter starter;
  };
  for (const Case& c : {Case{"this machine", planFor(here), false, "local", RankStarter::kHvdrun},
                        Case{"-H with another host", planFor(elsewhere), false, "ssh", RankStarter::kHvdrun},
                        Case{"a Slurm allocation", planFor(inSlurm, slurmJob), false, "srun", RankStarter::kSrun},
                        Case{"--mpi on this machine", planFor(here), true, "mpirun", RankStarter::kMpirun},
                        Case{"--mpi in a Slurm allocation", planFor(inSlurm, slurmJob), true, "mpirun",
                             RankStarter::kMpirun},
                        Case{"--mpi with another host", planFor(elsewhere), true, "mpirun", RankStarter::kMpirun}}) {
    INFO(c.what);
    o.useMpi = c.mpi;
    auto launcher = chooseLauncher(o, c.plan, "/bin/true");
    REQUIRE(launcher);
    CHECK(launcher->name() == c.launcher);
    CHECK(launcher->starter() == c.starter);
  }
}

TEST_CASE("a rank gets the same variables in the same order forked here, added to an elastic job, from a host agent "
          "and from the task shim",
          "[unit][launch]") {
  Options o;
  o.program = {"/bin/true"};
  o.minNp = 2;
  o.elasticTimeout = 45;
  o.runtimeVariables = {"HOROVOD_FUSION_THRESHOLD=1048576", "MY_SETTING=x"};
  o.networkInterface = "eth0";
  PlanRequest request;
  request.hostList = "here:2,node2:2";
  request.noSlurm = true;
  request.networkInterface = o.networkInterface;
  request.runtimeVariables = o.runtimeVariables;
  Plan plan = planFor(request);
  plan.maxRestarts = 2;
  plan.restartCount = 1;
  const RankPlan& rank = plan.ranks[1];  // on this machine, local rank 1
  const JobVariables job{"0123abcd", "/tmp/hvdrun-x/preempt", "USR2"};
  const std::string errorFile = "/tmp/errors/rank1.json";

  // A host agent: the parts hvdrun sends, through the protocol, and its host's parts.
  AgentJob agentJob;
  agentJob.ranks.push_back({rank.where.rank, o.program, {"PATH=/usr/bin", "HOME=/home/u"},
                            sshRankEnvironment(o, plan, rank, job, /*agentSharesGpus=*/false)});
  auto arrived = decodeAgentJob(encodeAgentJob(agentJob).substr(encodeAgentJob(agentJob).find('\n') + 1));
  REQUIRE(arrived.isOk());
  AgentRank& agentRank = arrived->ranks.front();
  const std::vector<std::string> agentEnv = completeAgentRank(agentRank, /*threads=*/1, /*rankCpus=*/1, errorFile);
  const std::vector<std::string> threads = agentRank.planned.part(RankEnvironment::Part::kThreads);
  REQUIRE(names(threads) == std::vector<std::string>{"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                     "TF_NUM_INTEROP_THREADS"});

  // Forked here.
  const RankEnvironment local = localRankEnvironment(o, plan, rank, job, threads, errorFile);

  // Added to the running elastic job (forkHere gives it its threads and error file).
  RankEnvironment added = addedRankEnvironment(o, plan, rank, job, rank.where.rank, /*after=*/3);
  added.threads(threads).errorFile(errorFile);

  // The task shim under srun or mpirun: its own plan (without the runtime's variables or the
  // restarts, which it reads from what the launcher passed), the task's environment.
  Plan shimPlan = plan;
  shimPlan.runtimeVariables.clear();
  shimPlan.restartCount = 0;
  shimPlan.maxRestarts = 0;
  slurm::Environment task{{"PATH", "/usr/bin"}, {"SLURM_PROCID", "1"}, {"MY_SETTING", "x"},
                          {"HOROVOD_FUSION_THRESHOLD", "1048576"}};
  for (const auto& list : {shimPlanVariables(plan, o), shimJobVariables(o, plan, job)}) {
    for (const std::string& kv : list) task[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  std::vector<std::string> inherited;
  RankEnvironment shim = shimRankEnvironment(shimPlan, shimPlan.ranks[1], task, false, threads, inherited);
  shim.errorFile(errorFile);

  const std::vector<std::string> expected = local.variables();
  INFO("forked here: " << Catch::Detail::stringify(expected));
  CHECK(shim.variables() == expected);
  CHECK(agentRank.planned.variables() == expected);
  CHECK(without(added.variables(), "HVD_ELASTIC_AFTER") == expected);
  // Only an added rank says which world it joins after, last of the elastic part.
  CHECK(added.part(RankEnvironment::Part::kElastic).back() == "HVD_ELASTIC_AFTER=3");
  // The launcher's own variables never reach a rank; what it inherits comes first.
  for (const std::string& kv : inherited) CHECK(kv.rfind("HVD_PLAN_", 0) != 0);
  CHECK(agentEnv.front() == "PATH=/usr/bin");
  CHECK(std::vector<std::string>(agentEnv.begin() + 2, agentEnv.end()) == expected);
  // The parts, in their order.
  const auto order = names(expected);
  auto at = [&](const std::string& name) { return std::find(order.begin(), order.end(), name) - order.begin(); };
  CHECK(at("HVD_RANK") < at("HVD_RENDEZVOUS_PORT"));
  CHECK(at("HVD_RENDEZVOUS_PORT") < at("HVD_NETWORK_INTERFACE"));
  CHECK(at("HOROVOD_FUSION_THRESHOLD") < at("HVD_SECRET_KEY"));
  CHECK(at("HVD_PREEMPT_SIGNAL") < at("HVD_ELASTIC_WORKER"));
  CHECK(at("HVD_ELASTIC_TIMEOUT") < at("OMP_NUM_THREADS"));
  CHECK(order.back() == "TORCHELASTIC_ERROR_FILE");
}

}  // namespace hvd::cli
