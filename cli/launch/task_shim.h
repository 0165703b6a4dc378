// cli/launch/task_shim.h: under srun and mpirun, one launcher process stands for every
// rank and hvdrun is no rank's parent. `hvdrun exec-rank` (the task srun or mpirun starts
// on each node) therefore stays as its rank's parent instead of becoming it, and does on
// the rank's node what hvdrun does for the ranks it forks:
//   - a rank that fails: reads the exception torch's @record wrote to its error file (a
//     path on that node) and hands it to hvdrun through the rendezvous store;
//   - a rank that ends badly: removes the job's /dev/shm objects on that node (a rank
//     killed in the middle of the runtime's set-up leaves its ring buffers there, in RAM,
//     until reboot; hvdrun's own sweep reaches only its own machine);
//   - a ParameterServerStrategy job: when the chief exits 0, every other task stops its
//     rank (SIGTERM, grace, SIGKILL) and exits 0, so srun and mpirun end the job as a success;
//   - a rank that ends badly: reports how, in the order the reports reach hvdrun, and whether
//     the launcher had told the task to stop (the shim holds the same signals pending), so
//     hvdrun names the root cause rather than whichever task srun or mpirun heard of first.
// The task ends as its rank did (the same exit code, or the same signal), so srun's and
// mpirun's reports, and hvdrun's summary, are unchanged.
//
// Signals: Slurm signals every process of a step and Open MPI the task's process group,
// so the rank gets them directly; the shim blocks them (it must outlive its rank to report)
// and forwards none. SIGKILL of the step takes both at once, which no process can outlive:
// the one case the sweep above misses (docs/hvdrun.md says so).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <map>

#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/rendezvous/launcher_reports.h"
#include "cli/supervise/rank_environment.h"
#include "runtime/common/status.h"
#include "slurm/environment.h"

namespace hvd::cli {

// The duties above, for whatever runs ranks on their node (the shim, an ssh host agent).
// rankEnv: a rank's environment, which names hvdrun's rendezvous; each call connects on its
// own and does nothing when hvdrun cannot be reached (it is gone: nobody is left to tell).
// After rank `rank` failed: hands what torch's @record wrote to errorFile over to hvdrun.
void handOverRecordedError(const std::vector<std::string>& rankEnv, int rank, const std::string& errorFile);
// The chief exited 0.
void announceCoordinatorDone(const std::vector<std::string>& rankEnv);
// Blocks until the chief's end is announced (true) or hvdrun is gone (false).
bool waitForCoordinatorDone(const std::vector<std::string>& rankEnv);
// A rank ended badly (TaskEndReport).
void reportTaskEnd(const std::vector<std::string>& rankEnv, const TaskEndReport& report);
// The rank whose going failed rank `rank`'s collectives, as that rank's runtime reported it
// (rendezvous peerGoneKey); nullopt when it reported none or hvdrun cannot be reached.
std::optional<int> peerGoneOf(const std::vector<std::string>& rankEnv, int rank);
// `ranks` more ranks were stopped because the chief was done (the summary counts them).
void countStoppedAfterCoordinator(const std::vector<std::string>& rankEnv, int ranks);

// The options a shim needs to rebuild the launcher's plan on its node, and to act as above:
// "exec-rank [options] -- program args...".
std::vector<std::string> execRankArguments(const Options& o);

// What a launcher passes its task shims in their environment beside those options: the
// plan's hosts and GPUs (HVD_PLAN_HOSTS, HVD_PLAN_GPUS) and the names of the runtime
// variables every rank gets (HVD_PLAN_RUNTIME_VARIABLES), whose values come with the job's.
std::vector<std::string> shimPlanVariables(const Plan& plan, const Options& o);
// The variables hvdrun decided once for the job, which every task inherits and passes on as
// they are: where the job's master and rendezvous are, the job's part (JobVariables), the
// runtime variables, an elastic job's, and which start of the job this is.
std::vector<std::string> shimJobVariables(const Options& o, const Plan& plan, const JobVariables& job);

// The environment the shim gives its rank, from the plan it rebuilt on its node (`me`, its
// rank there) and the task's own environment (`task`, with what the launcher passed):
// every part as hvdrun gives a rank it forks (rank_environment.h), with the values the
// launcher decided for the job (MASTER_PORT, the rendezvous, the restart counts) and, where
// Slurm bound the task's GPUs itself (keepSlurmGpus), those. `inherited` is set to what the
// rank inherits beside them (the task's, without the launcher's own variables).
RankEnvironment shimRankEnvironment(const Plan& plan, const RankPlan& me, const slurm::Environment& task,
                                    bool keepSlurmGpus, std::vector<std::string> threads,
                                    std::vector<std::string>& inherited);

struct TaskShimJob {
  int rank = 0;
  std::string host;
  std::string executable;         // resolved
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> inherited;  // what the rank inherits, "NAME=value"
  RankEnvironment env;                 // what hvdrun gives it; the shim adds torch's error file
  std::string shmPrefix;          // the job's /dev/shm names; empty: no secret, nothing to remove
  // A ParameterServerStrategy job's chief; this shim is the chief's when it equals rank.
  std::optional<int> coordinatorRank;
  std::chrono::milliseconds killGrace{5000};
};

// Runs the rank to its end, with the duties above. Fails with kSystem when the program could
// not be started. Call with no other thread running (it forks).
Result<TaskEnd> runTaskShim(const TaskShimJob& job);

}  // namespace hvd::cli
