// tests/ssh/ssh_bed.h: what the ssh test files share: the bed tests/ssh/sshbed.sh set up
// (hosts, names, the ssh command and key), hvdrun jobs over it, and the checks several
// files make (the processes left, ranks' identities, an endless stdin).
#pragma once

#include <catch2/catch.hpp>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/os/cpu_topology.h"
#include "runtime/common/json.h"
#include "tests/support/cpu_list.h"
#include "tests/support/discovery_script.h"
#include "tests/support/hvdrun_runner.h"
#include "tests/support/memory_cgroup.h"

namespace hvd::test::sshbed {

using Clock = std::chrono::steady_clock;

inline const std::string kRank = HVD_TEST_RANK_PATH;
inline const std::string kCollectiveRank = HVD_COLLECTIVE_RANK_PATH;
inline const std::string kEngineRank = HVD_ENGINE_RANK_PATH;

struct Bed {
  std::vector<std::string> hosts;  // addresses
  std::vector<std::string> names;  // hostnames, same order
  std::string dir, ssh, port, key;
  std::vector<double> clockAheadSeconds;  // each host's CLOCK_MONOTONIC against this machine's
};

inline std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

inline const Bed& bed() {
  static const Bed b = [] {
    Bed b;
    if (std::getenv("HVD_SSHBED_DIR") == nullptr) hvd::test::skipTest("not running under tests/ssh/sshbed.sh");
    b.hosts = splitCommas(std::getenv("HVD_SSHBED_HOSTS"));
    b.names = splitCommas(std::getenv("HVD_SSHBED_NAMES"));
    b.dir = std::getenv("HVD_SSHBED_DIR");
    b.ssh = std::getenv("HVD_SSHBED_SSH");
    b.port = std::getenv("HVD_SSHBED_PORT");
    b.key = std::getenv("HVD_SSHBED_KEY");
    for (const auto& s : splitCommas(std::getenv("HVD_SSHBED_CLOCK_AHEAD"))) b.clockAheadSeconds.push_back(std::stod(s));
    return b;
  }();
  return b;
}

// -H host01:slots,host02:slots,... and the ssh options the bed needs.
inline std::vector<std::string> sshJob(int slots, std::vector<std::string> rest) {
  const Bed& b = bed();
  std::string hosts;
  for (const auto& h : b.hosts) hosts += (hosts.empty() ? "" : ",") + h + ":" + std::to_string(slots);
  std::vector<std::string> args{"-H", hosts, "--ssh-command", b.ssh, "-p", b.port, "-i", b.key};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

inline hvd::cli::CapturedRun runSshJob(int slots, const std::vector<std::string>& rest,
                                       const std::vector<std::string>& env = {},
                                       std::chrono::seconds timeout = std::chrono::seconds(60)) {
  hvd::cli::RunOptions options;
  options.timeout = timeout;
  options.env = hvd::test::environmentWith(env);
  return hvd::test::runHvdrun(sshJob(slots, rest), options);
}

// Every process whose command line contains `needle` (any pid namespace view is the same here).
inline std::vector<int> processesMentioning(const std::string& needle) {
  std::vector<int> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

// hvdrun in the background with HVD_TEST_PIDDIR=pids; returns its pid once `count` ranks
// have written their pid files.
inline int startInBackground(const std::vector<std::string>& args, const std::string& pids, size_t count,
                      bool asShellJob = false, int stdinFd = -1) {
  int pid = hvd::test::spawnHvdrun(args, hvd::test::environmentWith({"HVD_TEST_PIDDIR=" + pids}), -1, asShellJob, -1,
                                   stdinFd);
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (hvd::test::readPidFiles(pids).size() < count && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(hvd::test::readPidFiles(pids).size() == count);
  return pid;
}

inline int waitExit(int pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string fileText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// An endless stdin ("y\n" over and over, as `yes` writes): the read end of a pipe a thread
// fills until nobody reads it any more. Joined when the reader's last holder is gone.
class EndlessInput {
 public:
  EndlessInput() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    readFd_ = fds[0];
    ::signal(SIGPIPE, SIG_IGN);
    writer_ = std::thread([fd = fds[1]] {
      const std::string chunk = [] {
        std::string text;
        for (int i = 0; i < 2048; ++i) text += "y\n";
        return text;
      }();
      while (::write(fd, chunk.data(), chunk.size()) > 0) {
      }
      ::close(fd);
    });
  }
  ~EndlessInput() {
    closeReadEnd();
    writer_.join();
  }
  int readFd() const { return readFd_; }
  void closeReadEnd() {
    if (readFd_ >= 0) ::close(readFd_);
    readFd_ = -1;
  }

 private:
  int readFd_ = -1;
  std::thread writer_;
};

// The cores (socket, core id) this process may use; the bed's hosts share this machine's CPUs.
inline int usableCores() {
  auto usable = hvd::cli::usableCpuTopology();
  REQUIRE(usable.isOk());
  std::set<std::pair<int, int>> coreIds;
  for (const auto& cpu : *usable) coreIds.insert({cpu.socket, cpu.core});
  return static_cast<int>(coreIds.size());
}

// The identity lines of a 6-rank job with two ranks on each of the bed's hosts, in order.
inline void checkTwoRanksPerHost(const std::string& out) {
  const Bed& b = bed();
  for (int rank = 0; rank < 6; ++rank) {
    int host = rank / 2;
    std::string line = "[" + std::to_string(rank) + "]<stdout>:rank=" + std::to_string(rank) + " size=6 local_rank=" +
                       std::to_string(rank % 2) + " local_size=2 cross_rank=" + std::to_string(host) +
                       " cross_size=3 torch_rank=" + std::to_string(rank) + " host=" + b.names[static_cast<size_t>(host)];
    CHECK(out.find(line) != std::string::npos);
  }
}

// An hvdrun for the other hosts that finds `devices` there as its CUDA_VISIBLE_DEVICES, as a
// host agent on a GPU node finds the driver's devices; in `dir`.
inline std::string hvdrunWithGpus(const hvd::test::TempDir& dir, const std::string& devices) {
  std::string path = dir.path() + "/hvdrun-gpus";
  {
    std::ofstream f(path);
    f << "#!/bin/sh\nCUDA_VISIBLE_DEVICES=" << devices << " exec " << HVD_HVDRUN_PATH << " \"$@\"\n";
  }
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

inline const std::string kShowGpus = "echo \"cvd=${CUDA_VISIBLE_DEVICES-unset} at=${HVD_LOCAL_GPU-unset}\"";

}  // namespace hvd::test::sshbed
