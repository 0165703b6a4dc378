// tests/support/hvdrun_runner.cc: process helpers for end-to-end tests.
#include "tests/support/hvdrun_runner.h"

#include "cli/os/machine.h"

#include <catch2/catch.hpp>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace hvd::test {

cli::CapturedRun runHvdrun(const std::vector<std::string>& args, const cli::RunOptions& options) {
  std::vector<std::string> argv{HVD_HVDRUN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = cli::runAndCapture(argv, options);
  INFO("starting hvdrun: " << run.status().message());
  REQUIRE(run.isOk());
  return *run;
}

cli::RunOptions withEnv(std::vector<std::string> env) {
  cli::RunOptions options;
  options.env = std::move(env);
  return options;
}

cli::RunOptions withTimeout(std::chrono::milliseconds timeout) {
  cli::RunOptions options;
  options.timeout = timeout;
  return options;
}

std::vector<std::string> environmentWith(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  auto nameOf = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    bool changed = false;
    for (const auto& c : changes) changed |= nameOf(c) == nameOf(kv);
    if (!changed) env.push_back(kv);
  }
  for (const auto& c : changes) {
    if (c.find('=') != std::string::npos) env.push_back(c);
  }
  return env;
}

std::vector<int> survivorsAfter(const std::vector<int>& pids, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<int> alive;
  do {
    alive.clear();
    for (int pid : pids) {
      if (!processGone(pid)) alive.push_back(pid);
    }
    if (alive.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return alive;
}

std::map<int, unsigned long long> networkTrafficByRank(const std::string& out) {
  std::map<int, unsigned long long> bytesOf;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    int rank = -1;
    unsigned long long bytes = 0;
    if (std::sscanf(line.c_str(), "[%*d]<stdout>:traffic %d %llu", &rank, &bytes) == 2) bytesOf[rank] = bytes;
  }
  return bytesOf;
}

std::vector<size_t> stdoutLineLengths(const std::string& out, int rank) {
  std::string prefix = "[" + std::to_string(rank) + "]<stdout>:";
  std::vector<size_t> lengths;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind(prefix, 0) == 0) lengths.push_back(l.size() - prefix.size());
  }
  return lengths;
}

std::string withoutThreadNote(const std::string& err) {
  std::string out;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    end = end == std::string::npos ? err.size() : end + 1;
    std::string line = err.substr(start, end - start);
    bool note = line.rfind("hvdrun: ", 0) == 0 && line.find(" ranks share ") != std::string::npos &&
                line.find("OMP_NUM_THREADS=") != std::string::npos;
    if (!note) out += line;
    start = end;
  }
  return out;
}

std::string hostName() { return cli::hostName(); }

char processState(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return '?';
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  // The state follows the last ')' (the command name may itself contain parentheses).
  auto close = content.rfind(')');
  return close == std::string::npos || close + 2 >= content.size() ? '?' : content[close + 2];
}

bool processGone(int pid) {
  char state = processState(pid);
  return state == '?' || state == 'Z' || state == 'X';
}

TempDir::TempDir() {
  char pattern[] = "/tmp/hvdtest.XXXXXX";
  const char* made = ::mkdtemp(pattern);
  REQUIRE(made != nullptr);
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int lineContaining(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  int number = 0, found = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find(text) != std::string::npos) found = number;
  }
  return found;
}

std::vector<int> readPidFiles(const std::string& dir) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".pid") continue;
    std::ifstream f(entry.path());
    int pid = 0;
    if (f >> pid) pids.push_back(pid);
  }
  return pids;
}

bool haveMpirun() {
  const char* path = std::getenv("PATH");
  return cli::findExecutable("mpirun", path != nullptr ? path : "").isOk();
}

std::string readToEnd(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

int spawnHvdrun(const std::vector<std::string>& args, const std::vector<std::string>& env, int stdoutFd,
                bool asShellJob, int stderrFd, int stdinFd) {
  std::vector<std::string> argv{HVD_HVDRUN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid > 0 && asShellJob) ::setpgid(pid, pid);  // both sides, as shells do: whichever runs first
  if (pid == 0) {
    if (asShellJob) ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(stdoutFd >= 0 ? stdoutFd : devnull, 1);
    ::dup2(stderrFd >= 0 ? stderrFd : devnull, 2);
    if (stdinFd >= 0) ::dup2(stdinFd, 0);
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : const_cast<std::vector<std::string>&>(env)) e.push_back(s.data());
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    _exit(127);
  }
  return pid;
}

}  // namespace hvd::test
