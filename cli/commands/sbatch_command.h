// cli/commands/sbatch_command.h: `hvdrun sbatch`, a job script for Slurm from the same
// options a launch takes: printed (--dry-run) or submitted (--submit).
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

// args excludes "hvdrun sbatch". Returns the exit code; throws UserError otherwise.
int runSbatchCommand(const std::vector<std::string>& args);

}  // namespace hvd::cli
