// slurm/allocation.cc: SLURM_*, OMPI_COMM_WORLD_* and PMIX_* variables to an Allocation.
#include "slurm/allocation.h"

#include <charconv>
#include <numeric>

#include "slurm/count_list.h"
#include "slurm/hostlist.h"

namespace hvd::slurm {
namespace {

Result<int> intVariable(const Environment& env, std::string_view name, int minimum) {
  auto v = lookup(env, name);
  if (!v) return notFound(std::string(name) + " is not set");
  int value = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
  if (v->empty() || ec != std::errc() || end != v->data() + v->size() || value < minimum) {
    return invalidArgument(std::string(name) + "='" + std::string(*v) + "' is not a whole number of at least " +
                           std::to_string(minimum));
  }
  return value;
}

// An optional integer: nullopt when unset, an error when malformed.
Result<std::optional<int>> optionalInt(const Environment& env, std::string_view name, int minimum) {
  if (!lookup(env, name)) return std::optional<int>();
  auto v = intVariable(env, name, minimum);
  if (!v) return v.status();
  return std::optional<int>(*v);
}

Result<std::vector<std::string>> nodesOf(const Environment& env, std::string_view name) {
  auto v = lookup(env, name);
  if (!v) return notFound(std::string(name) + " is not set");
  auto names = expandHostlist(*v);
  if (!names) return names.status().withContext(std::string(name));
  if (names->empty()) return invalidArgument(std::string(name) + " is set but lists no node");
  return names;
}

}  // namespace

std::string_view contextName(SlurmContext context) {
  switch (context) {
    case SlurmContext::kAllocationShell: return "allocation";
    case SlurmContext::kBatchStep: return "batch";
    case SlurmContext::kStepTask: return "step";
  }
  return "allocation";
}

std::string_view identitySourceName(IdentitySource source) {
  switch (source) {
    case IdentitySource::kSlurm: return "slurm";
    case IdentitySource::kOpenMpi: return "openmpi";
    case IdentitySource::kPmix: return "pmix";
  }
  return "slurm";
}

Result<std::optional<TaskIdentity>> mpiIdentityFromEnvironment(const Environment& env) {
  if (lookup(env, "OMPI_COMM_WORLD_RANK")) {
    TaskIdentity t;
    t.source = IdentitySource::kOpenMpi;
    auto rank = intVariable(env, "OMPI_COMM_WORLD_RANK", 0);
    auto size = intVariable(env, "OMPI_COMM_WORLD_SIZE", 1);
    auto local = intVariable(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
    auto localSize = intVariable(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    for (const Status& s : {rank.status(), size.status(), local.status(), localSize.status()}) {
      if (!s.isOk()) return s.withContext("started by Open MPI's mpirun");
    }
    t.rank = *rank, t.size = *size, t.localRank = *local, t.localSize = *localSize;
    // OMPI_COMM_WORLD_NODE_RANK is the rank among processes on the node, not the node's
    // index; Open MPI does not export the latter.
    t.nodeIndex = -1;
    if (t.rank >= t.size || t.localRank >= t.localSize) {
      return invalidArgument("OMPI_COMM_WORLD_RANK/LOCAL_RANK are not below OMPI_COMM_WORLD_SIZE/LOCAL_SIZE");
    }
    return std::optional<TaskIdentity>(t);
  }
  if (lookup(env, "PMIX_RANK")) {
    TaskIdentity t;
    t.source = IdentitySource::kPmix;
    auto rank = intVariable(env, "PMIX_RANK", 0);
    if (!rank) return rank.status();
    t.rank = *rank;
    // PMIx puts only the rank in the environment; srun --mpi=pmix adds the step's size
    // and local rank, which are this task's own in a step.
    auto size = optionalInt(env, "SLURM_STEP_NUM_TASKS", 1);
    auto local = optionalInt(env, "SLURM_LOCALID", 0);
    auto node = optionalInt(env, "SLURM_NODEID", 0);
    for (const Status& s : {size.status(), local.status(), node.status()}) {
      if (!s.isOk()) return s;
    }
    t.size = size->value_or(-1);
    t.localRank = local->value_or(-1);
    t.localSize = -1;
    t.nodeIndex = node->value_or(-1);
    return std::optional<TaskIdentity>(t);
  }
  return std::optional<TaskIdentity>();
}

Result<std::optional<Allocation>> allocationFromEnvironment(const Environment& env) {
  auto jobId = lookup(env, "SLURM_JOB_ID");
  if (!jobId) jobId = lookup(env, "SLURM_JOBID");
  if (!jobId) return std::optional<Allocation>();

  Allocation a;
  a.jobId = std::string(*jobId);
  // SLURM_JOB_NODELIST is the job's; SLURM_NODELIST is the step's inside a step on some
  // versions, so prefer the former.
  const char* nodesVar = lookup(env, "SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST" : "SLURM_NODELIST";
  auto names = nodesOf(env, nodesVar);
  if (!names) return names.status();

  bool inStep = lookup(env, "SLURM_STEP_ID").has_value() || lookup(env, "SLURM_STEPID").has_value();
  if (inStep && lookup(env, "SLURM_STEP_NODELIST")) {
    auto stepNodes = nodesOf(env, "SLURM_STEP_NODELIST");
    if (!stepNodes) return stepNodes.status();
    a.stepNodes = std::move(*stepNodes);
  }

  // Inside a step, SLURM_TASKS_PER_NODE is the step's (mpirun's helper step on the other
  // nodes shows "1(x2)" in a 3-node job); then the job's per-node tasks are unknown (-1).
  auto tasksText = lookup(env, "SLURM_TASKS_PER_NODE");
  std::vector<int> tasks(names->size(), 1);  // salloc -N without -n: one task per node
  if (tasksText) {
    auto parsed = parseCountList(*tasksText, "SLURM_TASKS_PER_NODE", 0);
    if (!parsed) return parsed.status();
    if (parsed->size() == names->size()) {
      tasks = std::move(*parsed);
    } else if (inStep && parsed->size() == a.stepNodes.size()) {
      tasks.assign(names->size(), -1);
      if (!lookup(env, "SLURM_STEP_TASKS_PER_NODE")) a.stepTasksPerNode = std::move(*parsed);
    } else {
      HVD_RETURN_IF_ERROR(checkCountMatchesNodes(*parsed, "SLURM_TASKS_PER_NODE", names->size(), nodesVar));
    }
  }
  std::vector<int> cpus(names->size(), 0);
  if (auto text = lookup(env, "SLURM_JOB_CPUS_PER_NODE")) {
    auto parsed = parseCountList(*text, "SLURM_JOB_CPUS_PER_NODE", 1);
    if (!parsed) return parsed.status();
    HVD_RETURN_IF_ERROR(checkCountMatchesNodes(*parsed, "SLURM_JOB_CPUS_PER_NODE", names->size(), nodesVar));
    cpus = std::move(*parsed);
  }

  auto gpus = gpuViewFrom(env);
  if (!gpus) return gpus.status();
  a.gpus = std::move(*gpus);

  for (size_t i = 0; i < names->size(); ++i) {
    NodeSlots node{(*names)[i], tasks[i], cpus[i], -1};
    // Per-node GPU counts for every node are only known when uniform.
    if (a.gpus.gpusPerNode >= 0) {
      node.gpus = a.gpus.gpusPerNode;
    } else if (a.gpus.gpusPerTask >= 0 && tasks[i] >= 0) {
      node.gpus = a.gpus.gpusPerTask * tasks[i];
    }
    a.nodes.push_back(std::move(node));
  }
  auto ntasks = optionalInt(env, "SLURM_NTASKS", 1);
  if (!ntasks) return ntasks.status();
  a.totalTasks = ntasks->value_or(std::accumulate(tasks.begin(), tasks.end(), 0));

  bool hasProcId = lookup(env, "SLURM_PROCID").has_value();
  a.context = inStep ? SlurmContext::kStepTask : hasProcId ? SlurmContext::kBatchStep : SlurmContext::kAllocationShell;

  if (inStep) {
    a.stepId = std::string(lookup(env, "SLURM_STEP_ID") ? *lookup(env, "SLURM_STEP_ID") : *lookup(env, "SLURM_STEPID"));
    if (auto text = lookup(env, "SLURM_STEP_TASKS_PER_NODE")) {
      auto parsed = parseCountList(*text, "SLURM_STEP_TASKS_PER_NODE", 0);
      if (!parsed) return parsed.status();
      if (!a.stepNodes.empty()) {
        HVD_RETURN_IF_ERROR(
            checkCountMatchesNodes(*parsed, "SLURM_STEP_TASKS_PER_NODE", a.stepNodes.size(), "SLURM_STEP_NODELIST"));
      }
      a.stepTasksPerNode = std::move(*parsed);
    }
  }

  auto mpi = mpiIdentityFromEnvironment(env);
  if (!mpi) return mpi.status();
  if (*mpi && (*mpi)->source == IdentitySource::kOpenMpi) {
    a.task = **mpi;
  } else if (hasProcId) {
    TaskIdentity t;
    auto rank = intVariable(env, "SLURM_PROCID", 0);
    auto local = optionalInt(env, "SLURM_LOCALID", 0);
    auto node = optionalInt(env, "SLURM_NODEID", 0);
    auto size = optionalInt(env, inStep ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS", 1);
    for (const Status& s : {rank.status(), local.status(), node.status(), size.status()}) {
      if (!s.isOk()) return s;
    }
    t.source = *mpi ? IdentitySource::kPmix : IdentitySource::kSlurm;
    t.rank = *rank;
    t.localRank = local->value_or(0);
    t.nodeIndex = node->value_or(0);
    t.size = inStep ? size->value_or(a.totalTasks) : 1;  // the batch step is one task
    const std::vector<int>& perNode = inStep && !a.stepTasksPerNode.empty() ? a.stepTasksPerNode : tasks;
    t.localSize = !inStep ? 1
                  : t.nodeIndex >= 0 && static_cast<size_t>(t.nodeIndex) < perNode.size() ? perNode[static_cast<size_t>(t.nodeIndex)]
                                                                                           : -1;
    if (t.rank >= t.size) {
      return invalidArgument("SLURM_PROCID=" + std::to_string(t.rank) + " is not below the step's " +
                             std::to_string(t.size) + " tasks");
    }
    a.task = t;
  }
  // One device held by the only task on its node is that task's own, whichever option
  // gave it (a lone --gpus-per-task=1 task sees 1 of its node's 1 GPU).
  if (a.gpus.binding == GpuBinding::kPerNode && a.gpus.visible.size() == 1 && a.task && a.task->localSize == 1 &&
      a.context == SlurmContext::kStepTask) {
    a.gpus.binding = GpuBinding::kPerTask;
  }
  return std::optional<Allocation>(std::move(a));
}

}  // namespace hvd::slurm
