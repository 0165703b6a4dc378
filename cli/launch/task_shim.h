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

#include "cli/options.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// Rendezvous keys the shims and hvdrun share.
std::string recordedErrorKey(int rank);  // "<message>\n<where>" of a failed rank's @record
inline constexpr const char* kCoordinatorDoneKey = "launcher/coordinator-done";
inline constexpr const char* kStoppedAfterCoordinatorKey = "launcher/stopped-after-coordinator";

// How the task ends: the rank's exit code, or the signal that killed it; exit 0 for a rank
// stopped because the chief finished.
struct TaskEnd {
  int exitCode = 0;
  int signal = 0;
};

// A rank's bad end, as its shim reports it.
struct TaskEndReport {
  int rank = 0;
  TaskEnd end;
  bool toldToStop = false;  // the launcher had signalled the task (SIGTERM, SIGINT, SIGHUP) first
  std::uint64_t oomKillsOnHost = 0;  // the kernel's OOM kills on its node while it ran (oom_kills.h)
};
std::string encodeTaskEndReport(const TaskEndReport& report);
std::optional<TaskEndReport> decodeTaskEndReport(std::string_view text);
// The job's root cause among reports in arrival order: a rank killed by a signal nobody
// sent its task (a crash, the OOM killer, a kill by hand) over one that exited with an
// error (typically a peer noticing the crash, and maybe heard of first); else the first
// error exit. Tasks told to stop never are: when only they reported, the cause's own task
// could not (SIGKILLed with its rank), and the launcher's messages tell instead.
std::optional<TaskEndReport> rootCauseOf(const std::vector<TaskEndReport>& inArrivalOrder);
inline constexpr const char* kEndReportCountKey = "launcher/ended";
std::string endReportKey(long long index);  // index 1 .. the count under kEndReportCountKey
// A rank that ended cleanly (exit 0, by itself): an elastic job's (HVD_ELASTIC_WORKER)
// next world leaves it out, and a peer that failed for want of it is reported as such.
// Bad ends are reported as above.
std::string cleanEndKey(int rank);

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

struct TaskShimJob {
  int rank = 0;
  std::string host;
  std::string executable;         // resolved
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;   // the rank's complete environment, "NAME=value"
  std::string shmPrefix;          // the job's /dev/shm names; empty: no secret, nothing to remove
  // A ParameterServerStrategy job's chief; this shim is the chief's when it equals rank.
  std::optional<int> coordinatorRank;
  std::chrono::milliseconds killGrace{5000};
};

// Runs the rank to its end, with the duties above. Fails with kSystem when the program could
// not be started. Call with no other thread running (it forks).
Result<TaskEnd> runTaskShim(const TaskShimJob& job);

}  // namespace hvd::cli
