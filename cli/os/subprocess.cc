// cli/os/subprocess.cc: fork/exec with pipes and a poll loop bounded by a deadline.
#include "cli/os/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/os/inherited_signals.h"

namespace hvd::cli {
namespace {

using Clock = std::chrono::steady_clock;

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string defaultPath() {
  char buf[256] = {};
  size_t n = ::confstr(_CS_PATH, buf, sizeof buf);
  return n > 0 && n <= sizeof buf ? std::string(buf) : std::string("/bin:/usr/bin");
}

std::string pathOf(const std::vector<std::string>& env) {
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) return kv.substr(5);
  }
  return defaultPath();
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<std::string> findExecutable(const std::string& argv0, const std::string& path) {
  if (argv0.empty()) return invalidArgument("an empty program name");
  if (argv0.find('/') != std::string::npos) {
    if (isExecutableFile(argv0)) return argv0;
    if (::access(argv0.c_str(), F_OK) != 0) return notFound("'" + argv0 + "' does not exist");
    return notFound("'" + argv0 + "' is not an executable file");
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    // An empty PATH entry means the current directory. (Built as one expression: GCC 12
    // reports a false -Wrestrict for assigning "." to the string afterwards.)
    std::string candidate = (end > start ? path.substr(start, end - start) : std::string(".")) + "/" + argv0;
    if (isExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return notFound("'" + argv0 + "' is not in PATH (" + (path.empty() ? "empty" : path) + ")");
}

std::optional<std::string> interpreterProblem(const std::string& executable) {
  int fd = ::open(executable.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // unreadable: exec says what it says
  char head[256];
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  if (n < 2 || head[0] != '#' || head[1] != '!') return std::nullopt;
  std::string_view line(head + 2, static_cast<size_t>(n) - 2);
  line = line.substr(0, line.find('\n'));
  size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view interpreter = line.substr(start, line.find_first_of(" \t", start) - start);
  if (!interpreter.empty() && interpreter.back() == '\r') {
    return "its #! line ends in a carriage return (Windows line ends), so the kernel looks for '" +
           std::string(interpreter.substr(0, interpreter.size() - 1)) + "\\r'";
  }
  std::string path(interpreter);
  if (::access(path.c_str(), F_OK) != 0) return "its #! line names " + path + ", which does not exist";
  if (!isExecutableFile(path)) return "its #! line names " + path + ", which is not an executable file";
  return std::nullopt;
}

std::string searchPath() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? std::string(path) : defaultPath();
}

Result<int> startDetached(const std::vector<std::string>& argv) {
  if (argv.empty()) return invalidArgument("no program to run");
  auto exe = findExecutable(argv[0], searchPath());
  if (!exe) return exe.status();
  auto args = cStrings(argv);
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) return systemError("/dev/null");
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(devnull);
    return systemError("fork");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    restoreIgnoredSignals();
    ::execv(exe->c_str(), args.data());
    _exit(127);
  }
  ::close(devnull);
  return static_cast<int>(pid);
}

Result<CapturedRun> runAndCapture(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) return invalidArgument("no program to run");
  std::string path = options.env ? pathOf(*options.env) : searchPath();
  auto exe = findExecutable(argv[0], path);
  if (!exe) return exe.status();

  int outPipe[2], errPipe[2], inPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) return systemError("pipe");
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    ::close(outPipe[0]), ::close(outPipe[1]);
    return systemError("pipe");
  }
  if (::pipe2(inPipe, O_CLOEXEC) != 0) {
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) ::close(fd);
    return systemError("pipe");
  }
  auto args = cStrings(argv);
  std::vector<char*> envp;
  if (options.env) envp = cStrings(*options.env);

  pid_t pid = ::fork();
  if (pid < 0) return systemError("fork");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(inPipe[0], STDIN_FILENO);
    ::dup2(outPipe[1], STDOUT_FILENO);
    ::dup2(errPipe[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    restoreIgnoredSignals();
    if (options.env) {
      ::execve(exe->c_str(), args.data(), envp.data());
    } else {
      ::execv(exe->c_str(), args.data());
    }
    _exit(127);
  }
  ::close(inPipe[0]);
  ::close(outPipe[1]);
  ::close(errPipe[1]);

  // Feed stdin from the poll loop too, so a program that prints before reading its input
  // cannot deadlock against us.
  size_t inOffset = 0;
  int inFd = inPipe[1];
  if (options.stdinText.empty()) {
    ::close(inFd);
    inFd = -1;
  } else {
    ::fcntl(inFd, F_SETFL, O_NONBLOCK);
  }
  ::signal(SIGPIPE, SIG_IGN);

  CapturedRun run;
  const auto deadline = Clock::now() + options.timeout;
  int fds[2] = {outPipe[0], errPipe[0]};
  std::string* sinks[2] = {&run.out, &run.err};
  while (fds[0] >= 0 || fds[1] >= 0 || inFd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      run.timedOut = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd pfds[3];
    int n = 0;
    for (int fd : fds) pfds[n++] = {fd, POLLIN, 0};
    pfds[n++] = {inFd, POLLOUT, 0};
    int rc = ::poll(pfds, n, static_cast<int>(left));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t got = ::read(fds[i], buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i]);
        fds[i] = -1;
      }
    }
    if (inFd >= 0 && (pfds[2].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      ssize_t put = ::write(inFd, options.stdinText.data() + inOffset, options.stdinText.size() - inOffset);
      if (put > 0) inOffset += static_cast<size_t>(put);
      if (put < 0 && errno != EAGAIN && errno != EINTR) inOffset = options.stdinText.size();
      if (inOffset == options.stdinText.size()) {
        ::close(inFd);
        inFd = -1;
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (inFd >= 0) ::close(inFd);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    run.exitCode = WEXITSTATUS(status);
  }
  return run;
}

std::string valueInEnvironment(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& kv : env) {
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=') {
      return kv.substr(name.size() + 1);
    }
  }
  return "";
}

int execErrorFrom(int fd) {
  int error = 0;
  ssize_t got;
  do {
    got = ::read(fd, &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  ::close(fd);
  return got == sizeof error ? error : 0;
}

}  // namespace hvd::cli
