// cli/elastic/host_discovery.cc: the script's runs and their output.
#include "cli/elastic/host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include "cli/os/inherited_signals.h"

extern char** environ;

namespace hvd::cli {
namespace {

constexpr size_t kMaxOutput = 64 << 10;
// Sent in place of the script's wait status when it printed kMaxOutput and went on; no
// wait status has it (the low 7 bits 0x7f mean "stopped", which waitpid does not report here).
constexpr int kTooMuchOutput = 0x7fff7f;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The child between hvdrun and the script: runs it with stdout and stderr into one pipe,
// waits, and writes "<wait status>\n<output>" to `result`. Async-signal-safe calls only.
[[noreturn]] void runScript(const char* script, int result, char* const* envp) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the script gets signals as programs expect
  int out[2];
  if (::pipe(out) != 0) ::_exit(1);
  pid_t pid = ::fork();
  if (pid < 0) ::_exit(1);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    char* argv[] = {const_cast<char*>(script), nullptr};
    restoreIgnoredSignals();  // was: the script ran with SIGPIPE ignored
    ::execve(script, argv, envp);
    const char why[] = "cannot run it: ";
    (void)!::write(STDERR_FILENO, why, sizeof why - 1);
    const char* error = ::strerror(errno);
    (void)!::write(STDERR_FILENO, error, ::strlen(error));
    ::_exit(127);
  }
  ::close(out[1]);
  static char buffer[kMaxOutput];
  size_t used = 0;
  while (true) {
    ssize_t n = ::read(out[0], buffer + used, used < kMaxOutput ? kMaxOutput - used : 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
    if (used == kMaxOutput) break;
  }
  // Still printing at the cap: it would block on the full pipe until the timeout. Stopped,
  // and reported as such (kTooMuchOutput in place of its wait status).
  const bool flooded = used == kMaxOutput;
  if (flooded) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (flooded) status = kTooMuchOutput;
  char head[32];
  int length = 0;
  for (unsigned v = static_cast<unsigned>(status), digits = 1000000000; digits > 0; digits /= 10) {
    if (v / digits != 0 || length > 0 || digits == 1) head[length++] = static_cast<char>('0' + (v / digits) % 10);
  }
  head[length++] = '\n';
  (void)!::write(result, head, static_cast<size_t>(length));
  for (size_t at = 0; at < used;) {
    ssize_t n = ::write(result, buffer + at, used - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  ::_exit(0);
}

}  // namespace

Result<std::vector<DiscoveredHost>> parseDiscoveredHosts(std::string_view output, int defaultSlots) {
  std::vector<DiscoveredHost> hosts;
  std::set<std::string> seen;
  while (!output.empty()) {
    size_t end = output.find('\n');
    std::string_view line = trimmed(output.substr(0, end));
    output = end == std::string_view::npos ? std::string_view() : output.substr(end + 1);
    if (line.empty()) continue;
    DiscoveredHost h;
    size_t colon = line.rfind(':');
    std::string_view name = line.substr(0, colon);
    h.slots = defaultSlots;
    if (colon != std::string_view::npos) {
      std::string_view slots = line.substr(colon + 1);
      auto [at, ec] = std::from_chars(slots.data(), slots.data() + slots.size(), h.slots);
      if (ec != std::errc() || at != slots.data() + slots.size() || h.slots < 1 || h.slots > 4096) {
        return Status(Errc::kInvalidArgument, "the host discovery script printed '" + std::string(line) +
                                                  "': the slots after ':' must be a number from 1 to 4096")
            .withHint("print one host a line, as host or host:slots");
      }
    }
    if (name.empty() || name.find_first_of(" \t,") != std::string_view::npos) {
      return Status(Errc::kInvalidArgument, "the host discovery script printed '" + std::string(line) +
                                                "', which is not a host name")
          .withHint("print one host a line, as host or host:slots");
    }
    h.host = std::string(name);
    if (!seen.insert(h.host).second) {
      return Status(Errc::kInvalidArgument, "the host discovery script named " + h.host + " twice")
          .withHint("print each host once, with all its slots (host:slots)");
    }
    hosts.push_back(std::move(h));
  }
  return hosts;
}

Result<std::vector<DiscoveredHost>> discoverHosts(const std::string& script, int defaultSlots,
                                                  std::chrono::milliseconds timeout) {
  int result[2];
  if (::pipe2(result, O_CLOEXEC) != 0) return systemError("a pipe for the host discovery script");
  pid_t child = ::fork();
  if (child < 0) {
    ::close(result[0]);
    ::close(result[1]);
    return systemError("fork for the host discovery script");
  }
  if (child == 0) {
    ::close(result[0]);
    runScript(script.c_str(), result[1], environ);
  }
  ::close(result[1]);
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timedOut = false;
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd p{result[0], POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) continue;
    ssize_t n = ::read(result[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(result[0]);
  // Reaped here or by the supervisor's wait for any child: either is fine, the answer came
  // through the pipe. Killing it takes the script with it (its parent-death signal).
  if (timedOut) ::kill(child, SIGKILL);
  int ignored = 0;
  while (::waitpid(child, &ignored, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    return Status(Errc::kTimeout, "the host discovery script " + script + " ran past " +
                                      std::to_string(timeout.count() / 1000) + " s");
  }
  size_t newline = text.find('\n');
  int status = 0;
  if (newline == std::string::npos ||
      std::from_chars(text.data(), text.data() + newline, status).ec != std::errc()) {
    return Status(Errc::kSystem, "the host discovery script " + script + " could not be run");
  }
  std::string output = text.substr(newline + 1);
  if (status == kTooMuchOutput) {
    return Status(Errc::kRemote, "the host discovery script " + script + " printed more than " +
                                     std::to_string(kMaxOutput >> 10) + " KiB, more than any list of hosts needs")
        .withHint("print one host a line, as host or host:slots, and exit");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return Status(Errc::kRemote, "the host discovery script " + script + " " + how +
                                     (output.empty() ? std::string() : ": " + output.substr(0, 500)));
  }
  return parseDiscoveredHosts(output, defaultSlots);
}

Result<std::unique_ptr<HostDiscovery>> HostDiscovery::start(std::string script, int defaultSlots,
                                                            std::chrono::milliseconds every) {
  auto first = discoverHosts(script, defaultSlots, std::chrono::seconds(30));
  if (!first) return first.status();
  std::unique_ptr<HostDiscovery> d(new HostDiscovery(std::move(script), defaultSlots, every, std::move(*first)));
  d->wakeFd_ = ::eventfd(0, EFD_CLOEXEC);
  if (d->wakeFd_ < 0) return systemError("eventfd for host discovery");
  // Born with every signal blocked: hvdrun's supervisor takes them from a signalfd.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  d->thread_ = std::thread([raw = d.get()] { raw->loop(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return d;
}

HostDiscovery::HostDiscovery(std::string script, int defaultSlots, std::chrono::milliseconds every,
                             std::vector<DiscoveredHost> first)
    : script_(std::move(script)), defaultSlots_(defaultSlots), every_(every), latest_(std::move(first)) {}

HostDiscovery::~HostDiscovery() {
  stopping_ = true;
  if (wakeFd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wakeFd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

std::vector<DiscoveredHost> HostDiscovery::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

void HostDiscovery::loop() {
  while (!stopping_) {
    pollfd p{wakeFd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(every_.count())) != 0 || stopping_) {
      if (stopping_) return;
      continue;
    }
    auto found = discoverHosts(script_, defaultSlots_, std::chrono::seconds(30));
    if (found) {
      std::lock_guard<std::mutex> lock(mutex_);
      latest_ = std::move(*found);
      lastProblem_.clear();
    } else if (found.status().message() != lastProblem_) {
      lastProblem_ = found.status().message();
      std::fprintf(stderr, "hvdrun: warning: %s; going on with the hosts it named before\n", lastProblem_.c_str());
    }
  }
}

}  // namespace hvd::cli
