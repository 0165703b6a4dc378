// cli/os/adopted_orphans.h: processes a job's ranks leave running outside their sessions.
// A daemon (fork, setsid, fork) leaves the rank's session and group, so the signals that
// stop a rank's whole tree miss it, and it would outlive the job with init as its parent,
// holding memory and GPUs. With this process the subreaper of its descendants, such an
// orphan becomes its child when its parent ends, and is found as one once the job is over.
// (A daemon whose parent outlives hvdrun, or that is orphaned after hvdrun was SIGKILLed,
// is still out of reach: only a cgroup could find those.)
#pragma once

#include <sys/types.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::cli {

// PR_SET_CHILD_SUBREAPER: descendants orphaned from now on become this process's children.
Status adoptOrphans();

struct AdoptedProcess {
  pid_t pid = 0;
  std::string command;  // /proc/PID/comm
};

// Stops this process's children other than `keep` (the ranks have all been reaped by now):
// after up to 0.5 s for them to end by themselves (those that do are neither stopped nor
// returned), SIGTERM to each one and its process group, up to `grace` for them to end, then
// SIGKILL; reaps them, and the orphans they leave in turn. Returns every process it stopped.
std::vector<AdoptedProcess> stopAdoptedOrphans(const std::set<pid_t>& keep, std::chrono::milliseconds grace);

// What hvdrun says of them, one line: how many, `where` (" on node02", or empty), and the
// first few as "pid 812 (sleep)".
std::string stoppedOrphansLine(const std::vector<AdoptedProcess>& processes, const std::string& where);

}  // namespace hvd::cli
