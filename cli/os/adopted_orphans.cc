// cli/os/adopted_orphans.cc: finding and stopping the children a subreaper has adopted.
#include "cli/os/adopted_orphans.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "cli/os/process_table.h"

namespace hvd::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How long a process the ranks left may take to end by itself before it is stopped and
// named: multiprocessing's resource tracker (spawn, forkserver) ends once its rank's pipe
// closes, a few milliseconds after the rank, and was reported as left running.
constexpr std::chrono::milliseconds kSettle{500};

// This process's children other than `keep`, the ended ones reaped (and left out).
std::vector<ProcessInfo> runningChildren(const std::set<pid_t>& keep) {
  std::vector<ProcessInfo> children = childrenOf(::getpid());
  std::erase_if(children, [&](const ProcessInfo& c) {
    if (keep.count(c.pid) > 0) return true;
    if (c.state != 'Z' && c.state != 'X') return false;
    (void)::waitpid(c.pid, nullptr, WNOHANG);
    return true;
  });
  return children;
}

}  // namespace

Status adoptOrphans() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return systemError("PR_SET_CHILD_SUBREAPER");
  return Status::ok();
}

std::vector<AdoptedProcess> stopAdoptedOrphans(const std::set<pid_t>& keep, std::chrono::milliseconds grace) {
  std::vector<AdoptedProcess> stopped;
  for (const auto settled = Clock::now() + kSettle; !runningChildren(keep).empty();) {
    if (Clock::now() >= settled) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::set<pid_t> seen, told;  // told: signalled in this phase (SIGTERM, then SIGKILL)
  const auto killAt = Clock::now() + grace;
  const auto giveUpAt = killAt + std::chrono::seconds(2);  // SIGKILLed processes end at once
  bool killing = false;
  while (Clock::now() < giveUpAt) {
    std::vector<ProcessInfo> children = runningChildren(keep);
    if (children.empty()) break;
    if (!killing && Clock::now() >= killAt) killing = true, told.clear();
    for (const ProcessInfo& c : children) {
      if (told.count(c.pid)) continue;
      if (seen.insert(c.pid).second) {
        std::string comm = readProcPath("/proc/" + std::to_string(c.pid) + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
        stopped.push_back({c.pid, comm});
      }
      const int sig = killing ? SIGKILL : SIGTERM;
      // Its group too: a daemon that called setsid leads one, with whatever it started.
      (void)::kill(-c.pid, sig);
      (void)::kill(c.pid, sig);
      told.insert(c.pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return stopped;
}

std::string stoppedOrphansLine(const std::vector<AdoptedProcess>& processes, const std::string& where) {
  constexpr size_t kShown = 8;
  std::string text = "hvdrun: stopped " + std::to_string(processes.size()) +
                     " process(es) the ranks left running outside their sessions" + where + ": ";
  for (size_t i = 0; i < processes.size() && i < kShown; ++i) {
    if (i > 0) text += ", ";
    text += "pid " + std::to_string(processes[i].pid) + " (" + processes[i].command + ")";
  }
  if (processes.size() > kShown) text += ", ...";
  return text + "\n";
}

}  // namespace hvd::cli
