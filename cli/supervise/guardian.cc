// cli/supervise/guardian.cc: the guardian's two sides. The child side runs between fork and
// _exit, never returning into hvdrun's code.
#include "cli/supervise/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/os/process_table.h"
#include "runtime/common/shm_names.h"

namespace hvd::cli {
namespace {

// Only the pipe and /dev/null: the guardian must not keep hvdrun's stdout or stderr open
// (whoever reads them would wait for it), nor any socket or file of the job.
void keepOnly(int fd) {
  int null = ::open("/dev/null", O_RDWR);
  for (int std = 0; std < 3; ++std) {
    if (null >= 0 && null != std) ::dup2(null, std);
  }
  std::vector<int> fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (dirent* entry = ::readdir(dir)) {
      int n = std::atoi(entry->d_name);
      if (n > 2 && n != fd && entry->d_name[0] != '.') fds.push_back(n);
    }
    ::closedir(dir);
  }
  for (int n : fds) ::close(n);  // includes the directory's own fd, already closed: harmless
}

// Processes in `sessions` (zombies are dead already).
std::vector<pid_t> membersOf(const std::set<pid_t>& sessions) {
  std::vector<pid_t> members;
  for (const ProcessInfo& p : processesInSessions(sessions)) members.push_back(p.pid);
  return members;
}

[[noreturn]] void guard(int fd, const std::string& shmPrefix) {
  ::setsid();  // away from hvdrun's process group: a signal to it (Ctrl-C, kill -- -PGID) passes by
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_IGN);
  keepOnly(fd);
  std::set<pid_t> sessions;
  std::vector<std::string> directories;
  std::string pending;
  bool released = false;
  char buffer[256];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
      std::string line = pending.substr(0, eol);
      if (line == "released") released = true;
      else if (line == "forget") sessions.clear();
      else if (line.rfind("session ", 0) == 0) sessions.insert(static_cast<pid_t>(std::atol(line.c_str() + 8)));
      else if (line.rfind("remove /", 0) == 0) directories.push_back(line.substr(7));
    }
  }
  if (released) _exit(0);
  // hvdrun's directories go whether or not ranks started (it may have been killed before).
  for (const std::string& directory : directories) {
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);  // a link in it is removed, never followed
  }
  // No rank was ever started (hvdrun failed before, or exits on an error): nothing else of
  // the job can exist, and hvdrun may be waiting for this process.
  if (sessions.empty()) _exit(0);
  // Groups first (one call each, atomic for the group), then whatever else is still in
  // the sessions; again until nothing is left, since a dying shell's children were forked.
  for (int round = 0; round < 50 && !sessions.empty(); ++round) {
    for (pid_t s : sessions) ::kill(-s, SIGKILL);
    std::vector<pid_t> left = membersOf(sessions);
    if (left.empty()) break;
    for (pid_t p : left) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A rank killed between shm_open and the unlink that follows its peer's answer leaves
  // its inbox; with every rank gone (each runs only once announced: supervisor.cc), none
  // of the job's objects is in use.
  removeShmObjects(shmPrefix);
  _exit(0);
}

}  // namespace

Result<Guardian> Guardian::start(std::string shmPrefix) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return systemError("pipe for the guardian");
  pid_t pid = ::fork();
  if (pid < 0) {
    int error = errno;
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    return systemError("fork for the guardian", error);
  }
  if (pid == 0) {
    ::close(pipeFds[1]);
    guard(pipeFds[0], shmPrefix);
  }
  ::close(pipeFds[0]);
  return Guardian(pipeFds[1], pid);
}

Guardian::Guardian(Guardian&& other) noexcept : fd_(std::exchange(other.fd_, -1)), pid_(std::exchange(other.pid_, -1)) {}

Guardian::~Guardian() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) {
    // The guardian is hvdrun's child: reap it (it finishes its work first; quick).
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

void Guardian::send(const std::string& line) {
  std::string_view data = line;
  while (fd_ >= 0 && !data.empty()) {
    ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a dead guardian: nothing to tell
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void Guardian::watch(pid_t session) { send("session " + std::to_string(session) + "\n"); }

void Guardian::removeIfOrphaned(const std::string& directory) {
  // Absolute paths only, one line each: nothing the guardian reads can name another place.
  if (directory.empty() || directory.front() != '/' || directory.find('\n') != std::string::npos) return;
  send("remove " + directory + "\n");
}

void Guardian::forget() { send("forget\n"); }

void Guardian::release() {
  send("released\n");
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace hvd::cli
