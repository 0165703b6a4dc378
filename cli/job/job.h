// cli/job/job.h: one job's life, whatever launches its ranks: the checks before anything
// starts, the job's secret, the rendezvous server of each start, the preemption notice, the
// starts themselves (again after a failure, --max-restarts), what hvdrun says of each end,
// the merged timeline. The launcher (chooseLauncher) is the only part that differs.
#pragma once

#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "slurm/environment.h"

namespace hvd::cli {

// Runs the plan's job to its end: hvdrun's exit code (docs/exit-codes.md). UserError for
// what keeps it from starting.
int runJob(const Options& o, Plan plan, const slurm::Environment& env);

}  // namespace hvd::cli
