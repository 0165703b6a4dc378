// cli/supervise/process_supervisor.h: starts a job's processes (its ranks, a launcher that
// stands for them, or host agents) and watches them to the end.
// Invariants: every process runs in its own session and process group and dies with
// hvdrun (PR_SET_PDEATHSIG); the first failure stops all the others (SIGTERM, then SIGKILL
// after the grace period); every output line reaches the console whole and prefixed.
// The end policy (end_policy.h) decides who ended the job; the output router
// (output_router.h) writes the lines; this file owns the processes and the poll loop.
#pragma once

#include <vector>

#include "cli/supervise/supervision.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// Blocks until every process has ended. Forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
// and SIGUSR2 to all of them; a second SIGINT, or the grace period after a stop (any of
// those but the SIGUSR notices), escalates to SIGKILL. Returns kSystem when a process could
// not be started (the ones started are then stopped); a failing rank is a successful
// supervision with firstFailure set. Call with no other thread running that forks.
Result<JobOutcome> superviseRanks(const std::vector<RankProcess>& processes, const SupervisorOptions& options);

}  // namespace hvd::cli
