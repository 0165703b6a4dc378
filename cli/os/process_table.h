// cli/os/process_table.h: the processes of given sessions, read from /proc.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace hvd::cli {

struct ProcessInfo {
  pid_t pid = 0;
  pid_t session = 0;
  char state = '?';  // /proc/PID/stat's: R, S, D, T (stopped), t (traced), ...
};

// Every live process whose session is one of `sessions`; zombies (dead already, listed
// until reaped) are left out. A process that ends while being read is skipped.
std::vector<ProcessInfo> processesInSessions(const std::set<pid_t>& sessions);

// The children of `parent`: every process whose parent is `parent`,
// zombies included (state 'Z'): a subreaper's adopted children are in no list it kept.
std::vector<ProcessInfo> childrenOf(pid_t parent);

// The process is ending already (the kernel's PF_EXITING, or a zombie) or gone: whatever
// signal it gets now, it dies of what it was dying of.
bool processEnding(pid_t pid);

// Everything left to read from fd, a /proc file, and closes it. A process that goes between
// the open and the read makes the kernel answer ESRCH: then what was read, maybe nothing
// (std::ifstream threw there, and the exception ended hvdrun).
std::string readProcFile(int fd);
// The same for a path; empty when it cannot be opened (the process is gone).
std::string readProcPath(const std::string& path);

}  // namespace hvd::cli
