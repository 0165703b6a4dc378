// slurm/allocation.h: what the scheduler (Slurm, or mpirun/PMIx inside it) gave this job
// and, when this process is one task of a step, who the task is. Built from the
// environment alone: no processes, no sockets. Nodes keep Slurm's order, never re-sorted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/common/status.h"
#include "slurm/environment.h"
#include "slurm/gpu_binding.h"

namespace hvd::slurm {

enum class SlurmContext {
  kAllocationShell,  // salloc's shell (or sbatch --wrap): job variables, no task identity
  kBatchStep,        // the sbatch script: SLURM_PROCID=0 on the first node, no SLURM_STEP_ID
  kStepTask,         // one task of an srun step: SLURM_STEP_ID, SLURM_PROCID, SLURM_LOCALID
};

// Where the rank identity came from. Under mpirun the SLURM_* variables are inherited from
// the batch step or mpirun's helper step, not per rank, so Open MPI's own come first.
enum class IdentitySource { kSlurm, kOpenMpi, kPmix };

struct NodeSlots {
  std::string name;
  int tasks = 0;  // SLURM_TASKS_PER_NODE for this node; -1 when only a step's is known
  int cpus = 0;   // SLURM_JOB_CPUS_PER_NODE for this node; 0 when unset
  int gpus = -1;  // GPUs allocated on this node; -1 when Slurm does not say
};

struct TaskIdentity {
  IdentitySource source = IdentitySource::kSlurm;
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;  // -1 when unknown (PMIx alone does not say)
  int nodeIndex = 0;  // SLURM_NODEID: index into the step's nodes (the job's in a batch step); -1 unknown
};

struct Allocation {
  std::string jobId;
  SlurmContext context = SlurmContext::kAllocationShell;
  std::vector<NodeSlots> nodes;     // the job's nodes, in Slurm's order
  int totalTasks = 0;               // SLURM_NTASKS, or the sum of tasks per node
  std::optional<std::string> stepId;
  std::vector<std::string> stepNodes;  // SLURM_STEP_NODELIST, expanded (steps only)
  std::vector<int> stepTasksPerNode;   // SLURM_STEP_TASKS_PER_NODE (steps only)
  std::optional<TaskIdentity> task;    // set in a batch step or step task
  GpuView gpus;                        // this process's view
};

// nullopt when SLURM_JOB_ID is unset (not inside Slurm). kInvalidArgument names the
// variable and token that are malformed or contradict each other (e.g. 3 nodes in
// SLURM_JOB_NODELIST but 2 counts in SLURM_TASKS_PER_NODE).
Result<std::optional<Allocation>> allocationFromEnvironment(const Environment& env);

// Rank identity from Open MPI (OMPI_COMM_WORLD_*) or PMIx (PMIX_RANK), when started by
// mpirun or srun --mpi=pmix, with or without Slurm; nullopt when neither is present.
Result<std::optional<TaskIdentity>> mpiIdentityFromEnvironment(const Environment& env);

std::string_view contextName(SlurmContext context);
std::string_view identitySourceName(IdentitySource source);

}  // namespace hvd::slurm
