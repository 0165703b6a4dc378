// cli/rendezvous/launcher_reports.h: what the processes that run ranks on their nodes (the
// task shim under srun and mpirun, a host agent over ssh) tell hvdrun through its
// rendezvous store, and the keys they use: how a rank ended, the exception torch's @record
// wrote for it, a ParameterServerStrategy job's chief being done. Encodings only: the
// shims' side that connects is cli/launch/task_shim.h, hvdrun's reads the server.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace hvd::cli
