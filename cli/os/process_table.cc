// cli/os/process_table.cc: one pass over /proc/*/stat.
#include "cli/os/process_table.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace hvd::cli {

std::vector<ProcessInfo> processesInSessions(const std::set<pid_t>& sessions) {
  std::vector<ProcessInfo> found;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return found;
  while (dirent* entry = ::readdir(dir)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    // Fields after the name: state, ppid, pgrp, session.
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (state.empty() || state == "Z" || !sessions.count(static_cast<pid_t>(session))) continue;
    found.push_back(ProcessInfo{pid, static_cast<pid_t>(session), state[0]});
  }
  ::closedir(dir);
  return found;
}

bool processEnding(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
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
