// cli/os/process_table.cc: one pass over /proc/*/stat.
#include "cli/os/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string>

namespace hvd::cli {

std::string readProcPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  return fd < 0 ? std::string() : readProcFile(fd);
}

std::string readProcFile(int fd) {
  std::string text;
  char buf[1024];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

namespace {

// Calls visit(pid, state, ppid, session) for every process /proc lists; one that ends while
// being read is skipped.
template <typename Visit>
void forEachProcess(Visit&& visit) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::string text = readProcPath("/proc/" + std::string(entry->d_name) + "/stat");
    size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    // Fields after the name: state, ppid, pgrp, session.
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (state.empty()) continue;
    visit(pid, state[0], static_cast<pid_t>(ppid), static_cast<pid_t>(session));
  }
  ::closedir(dir);
}

}  // namespace

std::vector<ProcessInfo> processesInSessions(const std::set<pid_t>& sessions) {
  std::vector<ProcessInfo> found;
  forEachProcess([&](pid_t pid, char state, pid_t, pid_t session) {
    if (state != 'Z' && sessions.count(session)) found.push_back(ProcessInfo{pid, session, state});
  });
  return found;
}

std::vector<ProcessInfo> childrenOf(pid_t parent) {
  std::vector<ProcessInfo> found;
  forEachProcess([&](pid_t pid, char state, pid_t ppid, pid_t session) {
    if (ppid == parent) found.push_back(ProcessInfo{pid, session, state});
  });
  return found;
}

bool processEnding(pid_t pid) {
  std::string text = readProcPath("/proc/" + std::to_string(pid) + "/stat");
  size_t close = text.rfind(')');
  if (close == std::string::npos) return true;  // gone
  // Fields after the name: state (3), ppid, pgrp, session, tty_nr, tpgid, flags (9).
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
  unsigned long flags = 0;
  rest >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags;
  constexpr unsigned long kPfExiting = 0x4;  // include/linux/sched.h
  return state == "Z" || state == "X" || (flags & kPfExiting) != 0;
}

}  // namespace hvd::cli
