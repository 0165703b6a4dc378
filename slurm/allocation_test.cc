// slurm/allocation_test.cc: allocations from environments as a real Slurm 22.05 cluster
// set them (values copied from the project's test cluster; tests/slurm/ checks the same
// live on every run).
#include "slurm/allocation.h"

#include <catch2/catch.hpp>

using namespace hvd::slurm;

namespace {

Allocation allocationOf(const Environment& env) {
  auto a = allocationFromEnvironment(env);
  INFO(a.status().message());
  REQUIRE(a.isOk());
  REQUIRE(a->has_value());
  return **a;
}

std::string errorOf(const Environment& env) {
  auto a = allocationFromEnvironment(env);
  REQUIRE_FALSE(a.isOk());
  return a.status().message();
}

// salloc -N3 -n5 --gpus-per-task=1, in the allocation's shell.
const Environment kSalloc = {
    {"SLURM_GPUS_PER_TASK", "1"},    {"SLURM_JOB_CPUS_PER_NODE", "2(x2),1"}, {"SLURM_JOB_ID", "1"},
    {"SLURM_JOB_NODELIST", "node[01-03]"}, {"SLURM_JOB_NUM_NODES", "3"},  {"SLURM_NODELIST", "node[01-03]"},
    {"SLURM_NTASKS", "5"},           {"SLURM_TASKS_PER_NODE", "2(x2),1"},
};

// srun -N3 -n5 --gpus-per-task=1: task 3 (node02, second task there).
Environment stepTask3() {
  return {{"CUDA_VISIBLE_DEVICES", "1"},        {"SLURM_GPUS_ON_NODE", "2"},          {"SLURM_JOB_CPUS_PER_NODE", "2(x2),1"},
          {"SLURM_JOB_ID", "2"},                {"SLURM_JOB_NODELIST", "node[01-03]"}, {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},                {"SLURM_NTASKS", "5"},                {"SLURM_PROCID", "3"},
          {"SLURM_STEP_GPUS", "1"},             {"SLURM_STEP_ID", "0"},               {"SLURM_STEP_NODELIST", "node[01-03]"},
          {"SLURM_STEP_NUM_TASKS", "5"},        {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
          {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
}

// sbatch -N3 --ntasks-per-node=2 --gpus-per-node=2: the batch script.
const Environment kBatch = {
    {"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_GPUS_ON_NODE", "2"},      {"SLURM_GPUS_PER_NODE", "2"},
    {"SLURM_JOB_CPUS_PER_NODE", "2(x3)"}, {"SLURM_JOB_GPUS", "0,1"},   {"SLURM_JOB_ID", "5"},
    {"SLURM_JOB_NODELIST", "node[01-03]"}, {"SLURM_LOCALID", "0"},     {"SLURM_NODEID", "0"},
    {"SLURM_NTASKS", "6"},           {"SLURM_PROCID", "0"},            {"SLURM_TASKS_PER_NODE", "2(x3)"},
};

}  // namespace

TEST_CASE("outside Slurm there is no allocation", "[unit][slurm]") {
  auto a = allocationFromEnvironment({{"PATH", "/bin"}});
  REQUIRE(a.isOk());
  CHECK_FALSE(a->has_value());
}

TEST_CASE("an salloc shell gives nodes in Slurm's order with uneven tasks and no task identity", "[unit][slurm]") {
  Allocation a = allocationOf(kSalloc);
  CHECK(a.jobId == "1");
  CHECK(a.context == SlurmContext::kAllocationShell);
  REQUIRE(a.nodes.size() == 3);
  CHECK(a.nodes[0].name == "node01");
  CHECK(a.nodes[2].name == "node03");
  CHECK(a.nodes[0].tasks == 2);
  CHECK(a.nodes[2].tasks == 1);
  CHECK(a.nodes[1].cpus == 2);
  CHECK(a.nodes[0].gpus == 2);  // --gpus-per-task=1 x 2 tasks
  CHECK(a.nodes[2].gpus == 1);
  CHECK(a.totalTasks == 5);
  CHECK_FALSE(a.task.has_value());
}

TEST_CASE("a task of a --gpus-per-task step knows its rank and that Slurm bound its GPU", "[unit][slurm]") {
  Allocation a = allocationOf(stepTask3());
  CHECK(a.context == SlurmContext::kStepTask);
  CHECK(a.stepId == "0");
  REQUIRE(a.task.has_value());
  CHECK(a.task->source == IdentitySource::kSlurm);
  CHECK(a.task->rank == 3);
  CHECK(a.task->size == 5);
  CHECK(a.task->localRank == 1);
  CHECK(a.task->localSize == 2);
  CHECK(a.task->nodeIndex == 1);
  CHECK(a.gpus.binding == GpuBinding::kPerTask);
  CHECK(a.gpus.visible == std::vector<std::string>{"1"});
}

TEST_CASE("a --gres=gpu:2 step shows every task the node's GPUs", "[unit][slurm]") {
  Environment env = stepTask3();
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  env["SLURM_STEP_GPUS"] = "0,1";
  env["SLURM_TASKS_PER_NODE"] = env["SLURM_STEP_TASKS_PER_NODE"] = "3,1(x2)";
  env["SLURM_JOB_CPUS_PER_NODE"] = "3,1(x2)";
  env["SLURM_LOCALID"] = "0";
  Allocation a = allocationOf(env);
  CHECK(a.gpus.binding == GpuBinding::kPerNode);
  CHECK(a.nodes[0].tasks == 3);
  CHECK(a.task->localSize == 1);
}

TEST_CASE("the batch step is task 0 of one, with the job's GPUs per node", "[unit][slurm]") {
  Allocation a = allocationOf(kBatch);
  CHECK(a.context == SlurmContext::kBatchStep);
  REQUIRE(a.task.has_value());
  CHECK(a.task->rank == 0);
  CHECK(a.task->size == 1);
  CHECK(a.nodes[2].gpus == 2);
  CHECK(a.gpus.jobGpus == std::vector<std::string>{"0", "1"});
  CHECK(a.gpus.binding == GpuBinding::kPerNode);
}

TEST_CASE("under mpirun the rank comes from Open MPI, not from the inherited Slurm step", "[unit][slurm]") {
  Environment env = kBatch;  // a rank on the batch node inherits the batch step's SLURM_*
  env["OMPI_COMM_WORLD_RANK"] = "4";
  env["OMPI_COMM_WORLD_SIZE"] = "6";
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  env["OMPI_COMM_WORLD_NODE_RANK"] = "2";
  Allocation a = allocationOf(env);
  CHECK(a.task->source == IdentitySource::kOpenMpi);
  CHECK(a.task->rank == 4);
  CHECK(a.task->localRank == 1);
  CHECK(a.task->nodeIndex == -1);  // OMPI_COMM_WORLD_NODE_RANK is not a node index
}

TEST_CASE("mpirun ranks on other nodes read the helper step's task counts without error", "[unit][slurm]") {
  // What a rank on node03 inherits from `srun -N2 orted` in a 3-node job.
  Environment env = stepTask3();
  env["SLURM_TASKS_PER_NODE"] = "1(x2)";
  env["SLURM_STEP_NODELIST"] = "node[02-03]";
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  env["OMPI_COMM_WORLD_RANK"] = "5";
  env["OMPI_COMM_WORLD_SIZE"] = "6";
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  Allocation a = allocationOf(env);
  CHECK(a.nodes.size() == 3);
  CHECK(a.nodes[0].tasks == -1);
  CHECK(a.stepTasksPerNode == std::vector<int>{1, 1});
  CHECK(a.task->rank == 5);
}

TEST_CASE("srun --mpi=pmix tasks take the rank from PMIx and the rest from the step", "[unit][slurm]") {
  Environment env = stepTask3();
  env["PMIX_RANK"] = "3";
  Allocation a = allocationOf(env);
  CHECK(a.task->source == IdentitySource::kPmix);
  CHECK(a.task->rank == 3);
  auto alone = mpiIdentityFromEnvironment({{"PMIX_RANK", "2"}});
  REQUIRE(alone.isOk());
  CHECK((*alone)->rank == 2);
  CHECK((*alone)->size == -1);
}

TEST_CASE("contradicting or malformed Slurm variables are errors naming the variable", "[unit][slurm]") {
  Environment env = kSalloc;
  env["SLURM_TASKS_PER_NODE"] = "2(x2)";
  CHECK(errorOf(env) == "SLURM_TASKS_PER_NODE describes 2 node(s) but SLURM_JOB_NODELIST lists 3");
  env = kSalloc;
  env["SLURM_JOB_NODELIST"] = "node[03-01]";
  CHECK(errorOf(env) == "SLURM_JOB_NODELIST: invalid hostlist 'node[03-01]' at position 6: '03-01' runs downwards; "
                        "write the smaller number first");
  env = stepTask3();
  env["SLURM_PROCID"] = "7";
  CHECK(errorOf(env) == "SLURM_PROCID=7 is not below the step's 5 tasks");
  env = stepTask3();
  env["CUDA_VISIBLE_DEVICES"] = "0,,1";
  CHECK(errorOf(env) == "CUDA_VISIBLE_DEVICES='0,,1' has an empty entry at position 3");
  env = kBatch;
  env["SLURM_GPUS_PER_NODE"] = "a100:x";
  CHECK(errorOf(env) == "SLURM_GPUS_PER_NODE='a100:x' is not a GPU count");
}

TEST_CASE("GPU counts with a type are read", "[unit][slurm]") {
  Environment env = kBatch;
  env["SLURM_GPUS_PER_NODE"] = "a100:4";
  CHECK(allocationOf(env).nodes[1].gpus == 4);
}
