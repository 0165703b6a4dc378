// cli/launch/local_launcher.h: every rank on this machine, forked by hvdrun itself. Each
// rank runs in a session of its own (spawn.h) watched by a guardian that outlives hvdrun
// (guardian.h), pinned to its CPUs with --bind-to, with its math libraries' threads set to
// its share of the CPUs, and a file for torch's @record exception (torch_error_file.h).
#pragma once

#include <memory>
#include <string>

#include "cli/launch/launcher.h"

namespace hvd::cli {

std::unique_ptr<Launcher> makeLocalLauncher(const Options& options, std::string executable);

// The variables of a rank hvdrun forks here beside the plan's: the thread counts of its math
// libraries (threadVars, the same for every rank, unless the user set them) and TensorFlow's
// inter-op threads for the CPUs it may use (rankCpus).
std::vector<std::string> localThreadVariables(const std::vector<std::string>& threadVars, int rankCpus);

// The environment of a rank hvdrun forks here: the plan's part, the job's, the elastic one
// (--min-np), its threads and its torch error file (empty: none), over hvdrun's own.
RankEnvironment localRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                     std::vector<std::string> threads, const std::string& errorFile);

}  // namespace hvd::cli
