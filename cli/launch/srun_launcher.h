// cli/launch/srun_launcher.h: running a plan inside a Slurm allocation as one srun step.
// Placement is exact: the plan's hosts, rank by rank, go to srun as SLURM_HOSTFILE with
// --distribution=arbitrary; every task starts `hvdrun exec-rank`, which applies its rank's
// environment. --label lets hvdrun attribute srun's merged output to ranks.
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

std::unique_ptr<Launcher> makeSrunLauncher();

// srun --label's output: "  3: text" is rank 3's line; Slurm's own words about the step
// (slurmstepd's, labelled with a task's number) and srun's are the launcher's.
std::unique_ptr<LineReader> srunLineReader();

struct SrunCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value" to add to srun's environment
};

// hostfilePath: a file holding srunHostfile(plan). jobWide: variables decided once for the
// job (MASTER_PORT, rendezvous, secret) that every task must receive unchanged
// (shimJobVariables).
SrunCommand srunCommand(const Plan& plan, const Options& options, const std::string& hvdrunPath,
                        const std::string& hostfilePath, const std::vector<std::string>& jobWide, bool insideStep);

// --srun-args as they go on srun's line: an --export without ALL gets the names of `env`'s
// variables (hvdrun's, which the task shim needs) added to it.
std::vector<std::string> withHvdrunExports(const std::vector<std::string>& srunArgs,
                                           const std::vector<std::string>& env);

// The hvdrun each task starts as its shim: this one, or in a container (--container-image
// in --srun-args) where --container-mounts puts this one, else the image's own on its PATH.
std::string shimExecutable(const std::vector<std::string>& srunArgs, const std::string& hvdrunPath);

// One line per rank: the host it runs on, in rank order.
std::string srunHostfile(const Plan& plan);

// What srun's own messages say about the first task that failed:
// "srun: error: node02: task 2: Exited with exit code 3" / "...: task 1: Killed" (the
// signal read back from strsignal's wording). pid and time are not known.
std::optional<RankFailure> firstSrunFailure(const std::vector<std::string>& launcherMessages);

// A hint for srun's failures whose words are Slurm's, not a task's: an allocation that has
// ended (a shell left from an old salloc) or a controller that does not answer. nullopt for
// anything else (its words then speak for themselves).
std::optional<std::string> srunTroubleHint(const std::vector<std::string>& launcherMessages);

}  // namespace hvd::cli
