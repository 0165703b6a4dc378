// cli/os/adopted_orphans.cc: finding and stopping the children a subreaper has adopted.
#include "cli/os/adopted_orphans.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "cli/os/process_table.h"

namespace hvd::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = 0;
  bool zombie = false;
};

std::string readSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  return fd < 0 ? std::string() : readProcFile(fd);
}

// This process's children from /proc (ppid), zombies included: a subreaper's adopted
// children are not in any list it kept.
std::vector<Child> childrenOfThisProcess(const std::set<pid_t>& keep) {
  std::vector<Child> found;
  const pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return found;
  while (dirent* entry = ::readdir(dir)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0 || keep.count(pid)) continue;
    std::string text = readSmallFile("/proc/" + std::string(entry->d_name) + "/stat");
    size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid != self) continue;
    found.push_back({pid, state == "Z" || state == "X"});
  }
  ::closedir(dir);
  return found;
}

}  // namespace

Status adoptOrphans() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return systemError("PR_SET_CHILD_SUBREAPER");
  return Status::ok();
}

std::vector<AdoptedProcess> stopAdoptedOrphans(const std::set<pid_t>& keep, std::chrono::milliseconds grace) {
  std::vector<AdoptedProcess> stopped;
  std::set<pid_t> seen, told;  // told: signalled in this phase (SIGTERM, then SIGKILL)
  const auto killAt = Clock::now() + grace;
  const auto giveUpAt = killAt + std::chrono::seconds(2);  // SIGKILLed processes end at once
  bool killing = false;
  while (Clock::now() < giveUpAt) {
    std::vector<Child> children = childrenOfThisProcess(keep);
    if (children.empty()) break;
    if (!killing && Clock::now() >= killAt) killing = true, told.clear();
    for (const Child& c : children) {
      if (c.zombie) {
        (void)::waitpid(c.pid, nullptr, WNOHANG);
        continue;
      }
      if (told.count(c.pid)) continue;
      if (seen.insert(c.pid).second) {
        std::string comm = readSmallFile("/proc/" + std::to_string(c.pid) + "/comm");
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
