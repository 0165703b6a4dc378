// cli/plan/plan_builder_test.cc: plans from every source, checked as properties over many
// generated allocations and against exact expectations for the cases users hit.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "cli/plan/plan.h"
#include "cli/launch/mpirun_launcher.h"
#include "cli/launch/srun_launcher.h"
#include "cli/options/options.h"
#include "cli/plan/plan_output.h"

using namespace hvd::cli;
using hvd::slurm::Environment;

namespace {

MachineFacts facts(int gpus = 0) {
  MachineFacts f;
  f.hostname = "here";
  f.localGpuCount = gpus;
  f.freePort = 40000;
  f.rendezvousPort = 40001;
  return f;
}

Plan planOf(const PlanRequest& r, const Environment& env = {}, const MachineFacts& f = facts()) {
  auto plan = buildPlan(r, env, f);
  INFO(plan.status().message());
  REQUIRE(plan.isOk());
  return *plan;
}

std::string errorOf(const PlanRequest& r, const Environment& env = {}, const MachineFacts& f = facts()) {
  auto plan = buildPlan(r, env, f);
  REQUIRE_FALSE(plan.isOk());
  return plan.status().message();
}

std::map<std::string, std::string> envOf(const Plan& plan, int rank) {
  std::map<std::string, std::string> out;
  for (const auto& kv : planEnvironment(plan, plan.ranks[static_cast<size_t>(rank)])) {
    out[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  return out;
}

Environment slurmJob(const std::string& nodes, const std::string& tasks) {
  return {{"SLURM_JOB_ID", "4242"}, {"SLURM_JOB_NODELIST", nodes}, {"SLURM_TASKS_PER_NODE", tasks}};
}

}  // namespace

TEST_CASE("generated Slurm allocations place every rank once, dense per host, GPUs unique per host", "[unit][plan]") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 500; ++trial) {
    int nodes = 1 + static_cast<int>(rng() % 12);
    std::string tasks;
    int total = 0;
    std::vector<int> perNode;
    for (int n = 0; n < nodes; ++n) {
      int t = 1 + static_cast<int>(rng() % 4);
      perNode.push_back(t);
      total += t;
      tasks += (n ? "," : "") + std::to_string(t);
    }
    Environment env = slurmJob("n[01-" + std::string(nodes < 10 ? "0" : "") + std::to_string(nodes) + "]", tasks);
    env["SLURM_GPUS_PER_NODE"] = "4";
    PlanRequest r;
    r.numProc = 1 + static_cast<int>(rng() % static_cast<uint32_t>(total));
    Plan plan = planOf(r, env);
    REQUIRE(plan.ranks.size() == static_cast<size_t>(r.numProc));
    std::map<std::string, std::vector<int>> locals;
    std::map<std::string, std::set<std::string>> gpus;
    for (size_t i = 0; i < plan.ranks.size(); ++i) {
      const RankPlan& rank = plan.ranks[i];
      REQUIRE(rank.where.rank == static_cast<int>(i));
      if (i > 0) REQUIRE(plan.ranks[i - 1].where.crossRank <= rank.where.crossRank);  // stable, host order
      locals[rank.where.host].push_back(rank.where.localRank);
      REQUIRE(rank.gpus.size() == 1);
      REQUIRE(gpus[rank.where.host].insert(rank.gpus[0]).second);  // unique per host
      // It sees its host's GPUs of the job, its own at its local rank (HVD_LOCAL_GPU).
      auto env = envOf(plan, rank.where.rank);
      REQUIRE(env["HVD_LOCAL_GPU"] == std::to_string(rank.where.localRank));
      REQUIRE(rank.visibleGpus.at(static_cast<size_t>(rank.where.localRank)) == rank.gpus[0]);
      std::string list;
      for (const auto& gpu : rank.visibleGpus) list += (list.empty() ? "" : ",") + gpu;
      REQUIRE(env["CUDA_VISIBLE_DEVICES"] == list);
      REQUIRE(rank.visibleGpus.size() == static_cast<size_t>(rank.where.localSize));
    }
    for (const auto& [host, l] : locals) {
      for (size_t k = 0; k < l.size(); ++k) REQUIRE(l[k] == static_cast<int>(k));
    }
    REQUIRE(plan.masterAddr == plan.ranks[0].where.host);
    REQUIRE(plan.masterPort == 20000 + 4242);
  }
}

TEST_CASE("without -np every slot gets a rank; with it hosts fill in order", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2,b:3";
  CHECK(planOf(r).ranks.size() == 5);
  r.numProc = 3;
  Plan p = planOf(r);
  CHECK(p.ranks[2].where.host == "b");
  CHECK(p.hosts[1].ranks == 1);
  r.numProc = 6;
  CHECK(errorOf(r) == "-np 6 is more than the 5 slot(s) of -H a:2,b:3");
  // --nproc-per-node gives hosts named without a count their slots: the hosts are said with
  // those, not with the 1 each had before ("the 4 slot(s) of -H a:1,b:1").
  PlanRequest perNode;
  perNode.hostList = "a,b";
  perNode.ranksPerHost = 2;
  perNode.numProc = 6;
  CHECK(errorOf(perNode) == "-np 6 is more than the 4 slot(s) of -H a:2,b:2");
  perNode.numProc = 0;
  CHECK(planOf(perNode).sourceDetail == "-H a:2,b:2");
}

TEST_CASE("torchrun's ranks per node put that many on every host and --nnodes must count the hosts", "[unit][plan]") {
  PlanRequest local;
  local.ranksPerHost = 3;
  Plan here = planOf(local);
  CHECK(here.ranks.size() == 3);
  CHECK(here.hosts.front().local);
  local.nnodes = 1;  // torchrun --standalone --nnodes=1 --nproc-per-node=3
  CHECK(planOf(local).ranks.size() == 3);
  local.nnodes = 2;
  CHECK(errorOf(local) == "--nnodes 2, but this machine is 1 host");

  PlanRequest listed;
  listed.hostList = "a:4,b:4";
  listed.ranksPerHost = 2;
  Plan two = planOf(listed);
  REQUIRE(two.ranks.size() == 4);
  CHECK(two.ranks[1].where.host == "a");
  CHECK(two.ranks[2].where.host == "b");
  CHECK(two.ranks[2].where.localRank == 0);
  CHECK(two.hosts[1].ranks == 2);
  listed.hostList = "a:1,b:4";
  CHECK(errorOf(listed) == "--nproc-per-node 2 is more than the 1 slot(s) of host a");
  listed.hostList = "a,b";  // no counts: as many as --nproc-per-node asks
  CHECK(planOf(listed).ranks.size() == 4);

  // Under Slurm: every node of the allocation, that many each.
  PlanRequest slurm;
  slurm.ranksPerHost = 2;
  Plan nodes = planOf(slurm, slurmJob("n[1-3]", "4(x3)"));
  CHECK(nodes.ranks.size() == 6);
  CHECK(nodes.hosts[2].ranks == 2);
  slurm.nnodes = 3;
  CHECK(planOf(slurm, slurmJob("n[1-3]", "4(x3)")).ranks.size() == 6);
}

TEST_CASE("torchrun's --nproc-per-node gpu, cpu and auto count each host's GPUs or CPUs",
          "[unit][plan]") {
  // torchrun --nproc-per-node gpu train.py: a rank per GPU. Before, "expects a whole number".
  MachineFacts four = facts(4);
  four.localCpuCount = 8;
  PlanRequest gpu;
  gpu.ranksPerHostWord = "gpu";
  CHECK(planOf(gpu, {}, four).ranks.size() == 4);
  gpu.gpusPerRank = 2;  // as many ranks as the GPUs allow
  CHECK(planOf(gpu, {}, four).ranks.size() == 2);
  gpu.gpusPerRank = 1;
  MachineFacts none = facts(0);
  none.localCpuCount = 8;
  CHECK(errorOf(gpu, {}, none) == "--nproc-per-node gpu, but host here shows no GPU");
  PlanRequest cpu;
  cpu.ranksPerHostWord = "cpu";
  cpu.noGpu = true;  // as the option sets it: a CPU job leaves the GPUs alone
  CHECK(planOf(cpu, {}, four).ranks.size() == 8);
  PlanRequest automatic;
  automatic.ranksPerHostWord = "auto";
  CHECK(planOf(automatic, {}, four).ranks.size() == 4);  // GPUs where there are any
  CHECK(planOf(automatic, {}, none).ranks.size() == 8);  // else CPUs
  // Other hosts: their GPUs where Slurm said them, never their CPUs from here.
  Environment job = slurmJob("n[1-2]", "8(x2)");
  MachineFacts slurmFacts = facts(0);
  slurmFacts.slurmNodeGpus = {{"n1", {"0", "1", "2"}}, {"n2", {"0", "1", "2"}}};
  CHECK(planOf(gpu, job, slurmFacts).ranks.size() == 6);
  // -H hosts: what each counted there (over ssh, before the plan), this machine's own here.
  PlanRequest listed = gpu;
  listed.hostList = "a,b:2,here";
  CHECK(hostsToCount(listed, four) == std::vector<std::string>{"a", "b"});
  CHECK(errorOf(listed, {}, four) == "--nproc-per-node gpu: hvdrun has no count of the GPUs of host a");
  MachineFacts counted = four;
  counted.sshHostCounts = {{"a", {3, 16}}, {"b", {2, 4}}};
  Plan byGpus = planOf(listed, {}, counted);
  CHECK(byGpus.hosts[0].ranks == 3);
  CHECK(byGpus.hosts[1].ranks == 2);  // within its 2 slots
  CHECK(byGpus.hosts[2].ranks == 4);  // this machine's 4 GPUs
  counted.sshHostCounts["b"].gpus = 3;
  CHECK(errorOf(listed, {}, counted) == "--nproc-per-node gpu asks for 3 ranks on host b, more than its 2 slot(s)");
  counted.sshHostCounts["b"].gpus = 0;
  CHECK(errorOf(listed, {}, counted) == "--nproc-per-node gpu, but host b shows no GPU");
  listed.ranksPerHostWord = "auto";  // b: its CPUs, as it has no GPU; but only its 2 slots
  CHECK(errorOf(listed, {}, counted) == "--nproc-per-node auto asks for 4 ranks on host b, more than its 2 slot(s)");
  listed.hostList = "a,b,here";
  CHECK(planOf(listed, {}, counted).hosts[1].ranks == 4);
  listed.ranksPerHostWord = "cpu";
  listed.noGpu = true;
  Plan byCpus = planOf(listed, {}, counted);
  CHECK(byCpus.hosts[0].ranks == 16);
  CHECK(byCpus.hosts[2].ranks == 8);
  counted.sshHostCounts.clear();
  CHECK(errorOf(listed, {}, counted) == "--nproc-per-node cpu: hvdrun has no count of the CPUs of host a");
  // Slurm nodes: cpu is the CPUs the job has on each (SLURM_JOB_CPUS_PER_NODE), within its tasks.
  PlanRequest slurmCpu;
  slurmCpu.ranksPerHostWord = "cpu";
  slurmCpu.noGpu = true;
  Environment cpuJob = slurmJob("n[1-2]", "4(x2)");
  cpuJob["SLURM_JOB_CPUS_PER_NODE"] = "4,2";
  Plan onNodes = planOf(slurmCpu, cpuJob, facts(0));
  CHECK(onNodes.hosts[0].ranks == 4);
  CHECK(onNodes.hosts[1].ranks == 2);
  cpuJob["SLURM_TASKS_PER_NODE"] = "1(x2)";
  CHECK(errorOf(slurmCpu, cpuJob, facts(0)) == "--nproc-per-node cpu asks for 4 ranks on host n1, more than its 1 slot(s)");
  // Nothing to count: no word, no -H, or a list that does not parse (the plan says why).
  listed.ranksPerHostWord.clear();
  CHECK(hostsToCount(listed, four).empty());
  PlanRequest local = gpu;
  CHECK(hostsToCount(local, four).empty());
  local.hostList = "a:x";
  CHECK(hostsToCount(local, four).empty());
}

TEST_CASE("local GPUs come from an inherited CUDA_VISIBLE_DEVICES before the driver's count", "[unit][plan]") {
  PlanRequest r;
  r.numProc = 2;
  Plan p = planOf(r, {{"CUDA_VISIBLE_DEVICES", "3,5"}}, facts(8));
  CHECK(p.ranks[0].gpus == std::vector<std::string>{"3"});
  CHECK(p.ranks[1].gpus == std::vector<std::string>{"5"});
  Plan driver = planOf(r, {}, facts(4));
  CHECK(driver.ranks[1].gpus == std::vector<std::string>{"1"});
  Plan none = planOf(r, {}, facts(0));
  CHECK(none.ranks[1].gpus.empty());
  CHECK(envOf(none, 1).count("CUDA_VISIBLE_DEVICES") == 0);
}

TEST_CASE("a rank with one GPU sees its host's GPUs of the job in local-rank order and its own at its local rank",
          "[unit][plan]") {
  PlanRequest r;
  r.numProc = 3;
  Plan p = planOf(r, {{"CUDA_VISIBLE_DEVICES", "3,5,6,7"}}, facts(8));
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    auto env = envOf(p, rank);
    // torch.cuda.set_device(hvd.local_rank()) and Keras's gpus[hvd.local_rank()] find it there.
    CHECK(env["CUDA_VISIBLE_DEVICES"] == "3,5,6");
    CHECK(env["HVD_LOCAL_GPU"] == std::to_string(rank));
  }
  CHECK(p.ranks[2].gpus == std::vector<std::string>{"6"});  // the plan's own GPU is unchanged
}

TEST_CASE("ranks with several GPUs each or sharing them see their own alone", "[unit][plan]") {
  PlanRequest r;
  r.numProc = 2;
  r.gpusPerRank = 2;
  Plan several = planOf(r, {}, facts(4));
  CHECK(envOf(several, 1)["CUDA_VISIBLE_DEVICES"] == "2,3");
  CHECK(envOf(several, 1)["HVD_LOCAL_GPU"] == "0");
  r.gpusPerRank = 1;
  Plan mig = planOf(r, {{"CUDA_VISIBLE_DEVICES", "MIG-a1,MIG-b2"}}, facts(0));  // CUDA would show only MIG-a1
  CHECK(envOf(mig, 1)["CUDA_VISIBLE_DEVICES"] == "MIG-b2");
  CHECK(envOf(mig, 1)["HVD_LOCAL_GPU"] == "0");
  r.numProc = 3;
  r.oversubscribeGpus = true;
  Plan shared = planOf(r, {}, facts(2));
  CHECK(envOf(shared, 2)["CUDA_VISIBLE_DEVICES"] == "0");
  CHECK(envOf(shared, 2)["HVD_LOCAL_GPU"] == "0");
}

TEST_CASE("more local ranks than GPUs is an error unless oversubscribed; --gpus-per-rank takes K each", "[unit][plan]") {
  PlanRequest r;
  r.numProc = 3;
  CHECK(errorOf(r, {}, facts(2)) == "host here offers 2 GPU(s) but its 3 rank(s) need 3 (1 each)");
  r.oversubscribeGpus = true;
  CHECK(planOf(r, {}, facts(2)).ranks[2].gpus == std::vector<std::string>{"0"});
  r.oversubscribeGpus = false;
  r.numProc = 2;
  r.gpusPerRank = 2;
  Plan p = planOf(r, {}, facts(4));
  CHECK(p.ranks[1].gpus == std::vector<std::string>{"2", "3"});
  CHECK(envOf(p, 1)["CUDA_VISIBLE_DEVICES"] == "2,3");
  r.noGpu = true;
  CHECK(planOf(r, {}, facts(4)).ranks[1].gpus.empty());
}

TEST_CASE("Slurm's per-node GPU lists from scontrol win over uniform counts", "[unit][plan]") {
  PlanRequest r;
  MachineFacts f = facts();
  f.slurmNodeGpus = {{"n1", {"0", "1"}}, {"n2", {"0", "1"}}, {"n3", {"0"}}};
  Plan p = planOf(r, slurmJob("n[1-3]", "2(x2),1"), f);
  CHECK(p.ranks[4].where.host == "n3");
  CHECK(p.ranks[4].gpus == std::vector<std::string>{"0"});
  CHECK(p.ranks[3].gpus == std::vector<std::string>{"1"});
  CHECK(p.ranks[3].gpuSlots == std::vector<int>{1});
  f.slurmNodeGpus["n3"] = {};
  Plan cpuNode = planOf(r, slurmJob("n[1-3]", "2(x2),1"), f);
  CHECK(cpuNode.ranks[4].gpus.empty());
}

TEST_CASE("the allocation is ignored with no-slurm or an explicit host list", "[unit][plan]") {
  PlanRequest r;
  r.noSlurm = true;
  r.numProc = 2;
  CHECK(planOf(r, slurmJob("n[1-3]", "1(x3)")).source == HostSource::kLocal);
  r.noSlurm = false;
  r.hostList = "x:2";
  CHECK(planOf(r, slurmJob("n[1-3]", "1(x3)")).ranks[0].where.host == "x");
}

TEST_CASE("a broken Slurm environment is reported with a way around it", "[unit][plan]") {
  PlanRequest r;
  auto plan = buildPlan(r, slurmJob("n[1-3]", "2(x2)"), facts());
  REQUIRE_FALSE(plan.isOk());
  CHECK(plan.status().message() ==
        "reading the Slurm allocation: SLURM_TASKS_PER_NODE describes 2 node(s) but SLURM_JOB_NODELIST lists 3");
  CHECK(plan.status().hint() == "--no-slurm ignores the allocation; -H or --hostfile name hosts instead");
}

TEST_CASE("torch, Horovod and hvdrun variables agree for every rank", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2,b:1";
  Plan p = planOf(r);
  auto e = envOf(p, 2);
  CHECK(e["RANK"] == "2");
  CHECK(e["HOROVOD_RANK"] == "2");
  CHECK(e["LOCAL_RANK"] == "0");
  CHECK(e["LOCAL_WORLD_SIZE"] == "1");
  CHECK(e["GROUP_RANK"] == "1");
  CHECK(e["HOROVOD_CROSS_SIZE"] == "2");
  CHECK(e["WORLD_SIZE"] == "3");
  CHECK(e["MASTER_ADDR"] == "a");
  CHECK(e["MASTER_PORT"] == "40000");
  CHECK(e["HVD_RENDEZVOUS_ADDR"] == "here");  // ranks elsewhere reach hvdrun by its host name
  CHECK(e["HVD_RENDEZVOUS_PORT"] == "40001");
  CHECK(e.count("HVD_SECRET_KEY") == 0);        // never part of a printed plan
  PlanRequest localOnly;
  localOnly.numProc = 2;
  CHECK(envOf(planOf(localOnly), 1)["HVD_RENDEZVOUS_ADDR"] == "127.0.0.1");
}

TEST_CASE("TF_CONFIG for MultiWorkerMirroredStrategy lists every worker, worker 0 first", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2,b:1";
  r.tfConfig = true;
  Plan p = planOf(r);
  CHECK(tfConfigJson(p, p.ranks[2]) ==
        R"({"cluster":{"worker":["a:8888","a:8889","b:8888"]},"task":{"type":"worker","index":2}})");
  // Each worker sees its own GPU alone: the strategy mirrors over every GPU a worker sees.
  r.hostList.clear();
  r.numProc = 2;
  Plan gpus = planOf(r, {{"CUDA_VISIBLE_DEVICES", "3,5"}}, facts(0));
  CHECK(envOf(gpus, 1)["CUDA_VISIBLE_DEVICES"] == "5");
  CHECK(envOf(gpus, 1)["HVD_LOCAL_GPU"] == "0");
}

TEST_CASE("ParameterServerStrategy roles: chief, workers, ps; the evaluator outside the cluster", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:3,b:3";
  r.tfConfig = true;
  r.tfPs = 2;
  r.tfChief = true;
  r.tfEvaluator = true;
  r.tfPortBase = 2222;
  Plan p = planOf(r, {}, facts());
  std::string cluster = R"({"cluster":{"chief":["a:2222"],"worker":["a:2223","a:2224"],"ps":["b:2222","b:2223"]},)";
  CHECK(tfConfigJson(p, p.ranks[0]) == cluster + R"("task":{"type":"chief","index":0}})");
  CHECK(tfConfigJson(p, p.ranks[4]) == cluster + R"("task":{"type":"ps","index":1}})");
  CHECK(tfConfigJson(p, p.ranks[5]) == cluster + R"("task":{"type":"evaluator","index":0}})");
}

TEST_CASE("parameter servers and evaluators get no GPU on a GPU host", "[unit][plan]") {
  PlanRequest r;
  r.numProc = 3;
  r.tfConfig = true;
  r.tfPs = 1;
  Plan p = planOf(r, {}, facts(2));
  CHECK(p.ranks[2].role == Role::kPs);
  CHECK(p.ranks[2].gpus.empty());
  CHECK(envOf(p, 2)["CUDA_VISIBLE_DEVICES"] == "");
  CHECK(p.ranks[1].gpus == std::vector<std::string>{"1"});
}

TEST_CASE("TF roles that do not add up, or without --tf-config, are errors", "[unit][plan]") {
  PlanRequest r;
  r.numProc = 3;
  r.tfConfig = true;
  r.tfPs = 2;
  r.tfChief = true;
  CHECK(errorOf(r) == "TF roles do not add up: 3 rank(s) cannot hold a chief, 2 parameter server(s) and at least "
                      "one worker");
  r.tfConfig = false;
  CHECK(errorOf(r) == "--tf-ps, --tf-chief and --tf-evaluator describe TF_CONFIG roles: add --tf-config");
}

TEST_CASE("conflicting host sources are refused", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a";
  r.hostfilePath = "hosts";
  r.hostfileText = "b\n";
  CHECK(errorOf(r) == "-H and --hostfile both name the hosts: give one of them");
}

TEST_CASE("binding to cores or sockets reaches the mpirun line as Open MPI's own -bind-to", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2";
  r.bindTo = hvd::cli::BindTo::kCore;
  std::string line = *renderPlan(planOf(r), PlanFormat::kMpi, std::nullopt, {"prog"});
  CHECK(line.rfind("mpirun -np 2 -H a:2 -bind-to core -map-by slot ", 0) == 0);
  r.bindTo = hvd::cli::BindTo::kSocket;
  line = *renderPlan(planOf(r), PlanFormat::kMpi, std::nullopt, {"prog"});
  CHECK(line.rfind("mpirun -np 2 -H a:2 -bind-to socket -map-by slot ", 0) == 0);
  r.bindTo = hvd::cli::BindTo::kCoreOverloadAllowed;
  line = *renderPlan(planOf(r), PlanFormat::kMpi, std::nullopt, {"prog"});
  CHECK(line.rfind("mpirun -np 2 -H a:2 -bind-to core:overload-allowed -map-by slot ", 0) == 0);
}

TEST_CASE("binding to cores or sockets reaches srun as its --cpu-bind and nothing is passed without it", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2";
  Options o;
  auto argsOf = [&](hvd::cli::BindTo bind) {
    r.bindTo = bind;
    auto argv = srunCommand(planOf(r), o, "/bin/hvdrun", "/tmp/hosts", {}, false).argv;
    std::string all;
    for (const auto& a : argv) all += a + " ";
    return all;
  };
  CHECK(argsOf(hvd::cli::BindTo::kCore).find(" --cpu-bind=cores ") != std::string::npos);
  CHECK(argsOf(hvd::cli::BindTo::kSocket).find(" --cpu-bind=sockets ") != std::string::npos);
  // srun places tasks that outnumber their cores itself; there is no overload qualifier.
  CHECK(argsOf(hvd::cli::BindTo::kCoreOverloadAllowed).find(" --cpu-bind=cores ") != std::string::npos);
  CHECK(argsOf(hvd::cli::BindTo::kNone).find("--cpu-bind") == std::string::npos);
}

TEST_CASE("the rank --stdin names reaches srun as --input and mpirun as --stdin and none as none", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2";
  Options o;
  auto joined = [](const std::vector<std::string>& argv) {
    std::string all;
    for (const auto& a : argv) all += a + " ";
    return all;
  };
  auto srunArgs = [&] { return joined(srunCommand(planOf(r), o, "/bin/hvdrun", "/tmp/hosts", {}, false).argv); };
  auto mpirunArgs = [&] { return joined(mpirunLaunchCommand(planOf(r), o, "/bin/hvdrun", {}, false).argv); };
  CHECK(srunArgs().find(" --input=0 ") != std::string::npos);
  CHECK(mpirunArgs().find(" --stdin 0 ") != std::string::npos);
  o.stdinRank = 1;
  CHECK(srunArgs().find(" --input=1 ") != std::string::npos);
  CHECK(mpirunArgs().find(" --stdin 1 ") != std::string::npos);
  o.stdinRank.reset();
  CHECK(srunArgs().find(" --input=none ") != std::string::npos);
  CHECK(mpirunArgs().find(" --stdin none ") != std::string::npos);
}

TEST_CASE("the formats render the same plan", "[unit][plan]") {
  PlanRequest r;
  r.hostList = "a:2,b:1";
  r.networkInterface = "ib0";
  Plan p = planOf(r);
  CHECK(*renderPlan(p, PlanFormat::kHostfile, std::nullopt, {}) == "a slots=2\nb slots=1\n");
  CHECK(*renderPlan(p, PlanFormat::kTable, std::nullopt, {}) ==
        "# 3 rank(s) on 2 host(s) from -H a:2,b:1; MASTER_ADDR=a MASTER_PORT=40000\n"
        " rank  host  local  cross  gpu        role\n"
        "    0  a         0      0  -          worker\n"
        "    1  a         1      0  -          worker\n"
        "    2  b         0      1  -          worker\n");
  CHECK(*renderPlan(p, PlanFormat::kMpi, std::nullopt, {"python", "train.py", "--tag", "a b"}) ==
        "mpirun -np 3 -H a:2,b:1 -bind-to none -map-by slot -mca btl_tcp_if_include ib0 -mca oob_tcp_if_include ib0 "
        "-x HOROVOD_SIZE=3 -x HOROVOD_CROSS_SIZE=2 -x HVD_SIZE=3 -x HVD_CROSS_SIZE=2 -x WORLD_SIZE=3 "
        "-x GROUP_WORLD_SIZE=2 -x ROLE_WORLD_SIZE=3 -x ROLE_NAME=default -x TORCHELASTIC_RESTART_COUNT=0 "
        "-x TORCHELASTIC_MAX_RESTARTS=0 -x TORCHELASTIC_RUN_ID=none -x MASTER_ADDR=a "
        "-x MASTER_PORT=40000 -x HVD_NETWORK_INTERFACE=ib0 -x NCCL_SOCKET_IFNAME=ib0 python train.py --tag 'a b'\n");
  std::string sh = *renderPlan(p, PlanFormat::kSh, 2, {});
  CHECK(sh.find("export RANK=2\n") != std::string::npos);
  CHECK(renderPlan(p, PlanFormat::kSh, std::nullopt, {}).status().message() ==
        "--format sh prints one rank's exports: add --rank R");
  CHECK(renderPlan(p, PlanFormat::kSh, 3, {}).status().message() == "--rank 3 is not a rank of this plan (0 to 2)");
  CHECK(renderPlan(p, PlanFormat::kTfConfig, 0, {}).status().message() == "--format tf_config needs --tf-config");
  CHECK(parsePlanFormat("yaml").status().message() ==
        "--format 'yaml' is not one of table, json, sh, hostfile, tf_config, mpi");
}

TEST_CASE("a host list naming this machine twice under two names is refused naming both", "[unit][plan]") {
  // localhost and 127.0.0.1 (or the host name) were two hosts of 2 local ranks each: four
  // ranks here with local ranks 0 1 0 1, two of them on each GPU, and no shared memory
  // between the halves.
  PlanRequest r;
  r.hostList = "localhost:2,127.0.0.1:2";
  CHECK(errorOf(r) == "-H names this machine twice: 'localhost' and '127.0.0.1' (its ranks would be numbered as two "
                      "hosts' and share its GPUs twice over)");
  r.hostList = "here:2,b:2,localhost:1";
  CHECK(errorOf(r) == "-H names this machine twice: 'here' and 'localhost' (its ranks would be numbered as two "
                      "hosts' and share its GPUs twice over)");
  r.hostList = "here:2,b:2";
  CHECK(planOf(r).ranks.size() == 4);
}

TEST_CASE("a PBS node file and an LSF host list give the plan the same -H gives, and say where the hosts came from",
          "[unit][plan]") {
  PlanRequest byList;
  byList.hostList = "n1:3,n2:2";
  const Plan expected = planOf(byList);
  PlanRequest pbs;
  pbs.pbsNodefileText = "n1\nn1\nn2\nn1\nn2\n";  // one line per slot, as PBS writes it
  const Plan fromPbs = planOf(pbs, {{"PBS_NODEFILE", "/var/spool/pbs/aux/42.srv"}, {"PBS_JOBID", "42.srv"}});
  const Plan fromLsf = planOf(PlanRequest{}, {{"LSB_MCPU_HOSTS", "n1 3 n2 2"}, {"LSB_JOBID", "77"}});
  for (const Plan* plan : {&fromPbs, &fromLsf}) {
    REQUIRE(plan->ranks.size() == expected.ranks.size());
    for (size_t i = 0; i < expected.ranks.size(); ++i) {
      CHECK(plan->ranks[i].where.host == expected.ranks[i].where.host);
      CHECK(plan->ranks[i].where.localRank == expected.ranks[i].where.localRank);
      CHECK(plan->ranks[i].where.crossRank == expected.ranks[i].where.crossRank);
    }
  }
  CHECK(fromPbs.source == HostSource::kPbs);
  CHECK(fromPbs.sourceDetail == "PBS job 42.srv (PBS_NODEFILE /var/spool/pbs/aux/42.srv)");
  CHECK(fromLsf.source == HostSource::kLsf);
  CHECK(fromLsf.sourceDetail == "LSF job 77 (LSB_MCPU_HOSTS)");
  // -H, a hostfile and a Slurm allocation come first.
  CHECK(planOf(byList, {{"LSB_MCPU_HOSTS", "x 1"}}).source == HostSource::kHostList);
  PlanRequest tooMany;
  tooMany.numProc = 6;
  CHECK(errorOf(tooMany, {{"LSB_MCPU_HOSTS", "n1 3 n2 2"}}) ==
        "-np 6 is more than the 5 slot(s) of LSF job ? (LSB_MCPU_HOSTS)");
}

TEST_CASE("a malformed LSF host list or PBS node file is refused naming the variable and the token", "[unit][plan]") {
  CHECK(errorOf(PlanRequest{}, {{"LSB_MCPU_HOSTS", "n1 3 n2"}}) ==
        "LSB_MCPU_HOSTS='n1 3 n2': host 'n2' has no slot count (LSF writes 'hostA 4 hostB 2')");
  CHECK(errorOf(PlanRequest{}, {{"LSB_MCPU_HOSTS", "n1 x"}}) ==
        "LSB_MCPU_HOSTS: host 'n1' has slot count 'x', which is not a whole number of at least 1");
  PlanRequest empty;
  empty.pbsNodefileText = "# nothing\n";
  CHECK(errorOf(empty, {{"PBS_NODEFILE", "/pbs/nodes"}}) == "PBS_NODEFILE: /pbs/nodes: lists no host");
}
