// cli/commands/exec_rank_command.h: `hvdrun exec-rank`, the task shim launchers start on
// every node (srun, mpirun). It rebuilds the launcher's plan from HVD_PLAN_HOSTS and the
// same options, finds its own rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMIX_RANK),
// checks the placement, applies that rank's environment and GPUs, and execs the program.
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

// Does not return on success (execve). Throws UserError when the rank cannot be placed.
int runExecRankCommand(const std::vector<std::string>& args);

}  // namespace hvd::cli
