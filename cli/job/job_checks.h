// cli/job/job_checks.h: what a job's options and plan are checked for before anything
// starts, each refused with UserError naming the option (exit 2, or 3 for a program that
// cannot run): a request that cannot work fails at once, not after the ranks started.
#pragma once

#include <string>

#include "cli/elastic/elastic_options.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"

namespace hvd::cli {

// The program's path: it exists and can run (its script's interpreter too).
std::string checkProgram(const Options& o);
// --stdin names a rank of this job.
void checkStdinRank(const Options& o, const Plan& plan);
// --ranks-filter names at least one rank of this job.
void checkRanksFilter(const Options& o, const Plan& plan);
// --timeline-filename names a file hvdrun can merge the ranks' traces into.
void checkTimelinePath(const Options& o);
// --min-np and its options fit the job and whoever starts its ranks.
void checkElastic(const Options& o, const Plan& plan, RankStarter starter);

}  // namespace hvd::cli
