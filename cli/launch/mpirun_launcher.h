// cli/launch/mpirun_launcher.h: running a plan with Open MPI's mpirun (--mpi). mpirun places
// ranks by -H host:n with -map-by slot (the plan's block order); each rank starts
// `hvdrun exec-rank`, which takes its identity from OMPI_COMM_WORLD_* (under mpirun the
// SLURM_* variables are the batch step's or mpirun's helper step's, not the rank's) and
// pins its GPUs. Job-wide values travel as -x NAME from mpirun's environment, so the
// secret is never on a command line.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/launch/launcher.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/supervise/line_reader.h"

namespace hvd::cli {

std::unique_ptr<Launcher> makeMpirunLauncher();

// mpirun --tag-output's output, put back together per rank (open_mpi_tags.h).
std::unique_ptr<LineReader> mpirunLineReader(size_t maxLine);

struct MpirunCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value" for mpirun's environment, exported with -x NAME
};

// jobWide: shimJobVariables, which every rank receives unchanged.
MpirunCommand mpirunLaunchCommand(const Plan& plan, const Options& options, const std::string& hvdrunPath,
                                  const std::vector<std::string>& jobWide, bool asRoot);

// From mpirun's messages: "Process name: [[J,1],R]" + "Exit code: N" (no host), or
// "process rank R with PID P on node H exited on signal S".
std::optional<RankFailure> firstMpirunFailure(const std::vector<std::string>& messages);

}  // namespace hvd::cli
