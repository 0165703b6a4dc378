// cli/launch/launcher_outcome.h: a job run by a launcher that stands for every rank (srun,
// mpirun) ends with that one process's end; what its task shims reported through the
// rendezvous (launcher_reports.h) and its own messages say which rank was the root cause.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "cli/plan/plan.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

// The root cause the task shims reported, or nullopt when none did (a job that did not fail,
// or a shim lost with its rank): then the launcher's own messages tell. An elastic job's ranks
// it went on without (leftBehind) are left out: they are not why it ended. Only the first
// `reportLimit` reports count when it is set: those in before hvdrun's own stop
// (reportsInNow at SupervisorOptions::onOwnStop); later ones are ranks that stop killed.
std::optional<RankFailure> rootCauseFromShims(const RendezvousServer* server, const JobOutcome& result,
                                              const std::set<int>& leftBehind = {},
                                              std::optional<long long> reportLimit = std::nullopt);

// How many task-end reports the shims have made so far.
long long reportsInNow(const RendezvousServer& server);

// The failing rank the task shims name (fromShims), else the one the launcher's own words name
// (fromWords), is the job's root cause and exit code, unless the job never started. When
// hvdrun stopped the job itself (a signal, its console gone), only a failure the shims
// reported counts: it came before the stop. With none named, the launcher's own end is the
// cause (the supervisor took it for rank 0's), with its last words.
void adoptLauncherFailure(JobOutcome& result, std::optional<RankFailure> fromShims,
                          std::optional<RankFailure> fromWords, const Plan& plan, const std::string& launcher);

// A ParameterServerStrategy job: the chief's shim (or host agent) said the chief exited 0,
// and the others stopped their ranks and exited 0 (task_shim.h).
void adoptCoordinatorEnd(JobOutcome& result, const RendezvousServer* server);

}  // namespace hvd::cli
