// tests/e2e/orphans_e2e_test.cc: hvdrun SIGKILLed at random moments leaves nothing behind:
// no process of any rank's tree (ranks behind one and two levels of shell, the shape of
// every wrapper script) and no shared-memory object of the job in /dev/shm.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::processGone;
using hvd::test::readPidFiles;
using hvd::test::spawnHvdrun;
using hvd::test::survivorsAfter;
using hvd::test::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kRank = HVD_TEST_RANK_PATH;
const std::string kCollectiveRank = HVD_COLLECTIVE_RANK_PATH;


void killAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::set<std::string> hvdShmObjects() {
  std::set<std::string> names;
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name.rfind("hvd-", 0) == 0 && name.rfind("hvd-test-", 0) != 0) names.insert(name);
    }
    ::closedir(dir);
  }
  return names;
}

}  // namespace

TEST_CASE("hvdrun SIGKILLed at random moments leaves no process of ranks behind one or two shells, 100 times",
          "[e2e][mp][orphans]") {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> delayMs(0, 400);
  int survivors = 0;
  for (int trial = 0; trial < 100; ++trial) {
    TempDir pids;
    // The innermost process writes its pid file, then sleeps: a wrapper's `prog; true`.
    std::string prog = kRank + " sleep 60; true";
    std::string command = trial % 2 == 0 ? prog : "sh -c '" + prog + "'; true";
    pid_t hvdrun = spawnHvdrun({"-np", "4", "sh", "-c", command}, environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}));
    int delay = delayMs(random);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    killAndReap(hvdrun);
    // A rank that escaped would still write its pid file: give it the time to.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    auto alive = survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(5000));
    INFO("trial " << trial << ", killed after " << delay << " ms, " << (trial % 2 + 1) << " shell level(s)");
    CHECK(alive.empty());
    survivors += static_cast<int>(alive.size());
    for (int pid : alive) ::kill(pid, SIGKILL);
  }
  CHECK(survivors == 0);
}

// What is left in `dir` within `limit` (the guardian removes hvdrun's directories as it
// finishes: shortly after hvdrun's death).
std::vector<std::string> leftIn(const std::string& dir, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  std::vector<std::string> left;
  do {
    left.clear();
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* entry = ::readdir(d)) {
        if (entry->d_name[0] != '.') left.push_back(entry->d_name);
      }
      ::closedir(d);
    }
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Clock::now() < deadline);
  return left;
}

TEST_CASE("hvdrun SIGKILLed at random moments leaves nothing in TMPDIR, 20 times", "[e2e][mp][orphans]") {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> delayMs(0, 300);
  for (int trial = 0; trial < 20; ++trial) {
    TempDir tmp;
    pid_t hvdrun = spawnHvdrun({"-np", "2", "sh", "-c", "sleep 60; true"}, environmentWith({"TMPDIR=" + tmp.path()}));
    int delay = delayMs(random);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    killAndReap(hvdrun);
    auto left = leftIn(tmp.path(), std::chrono::seconds(5));
    INFO("trial " << trial << ", killed after " << delay << " ms: " << (left.empty() ? "" : left.front()));
    CHECK(left.empty());  // neither the ranks' error files' directory nor the preemption flag's
  }
}

TEST_CASE("hvdrun SIGKILLed after a restart leaves no process of the new start's ranks behind a shell", "[e2e][mp][orphans]") {
  TempDir pids, tmp;
  // The first start's ranks fail at once; the restart's sleep behind a shell.
  std::string command = "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 1 ]; then " + kRank + " sleep 60; true; else exit 3; fi";
  pid_t hvdrun = spawnHvdrun({"-np", "2", "--max-restarts", "1", "sh", "-c", command},
                             environmentWith({"HVD_TEST_PIDDIR=" + pids.path(), "TMPDIR=" + tmp.path()}));
  std::vector<int> ranks;
  for (auto deadline = Clock::now() + std::chrono::seconds(20); ranks.size() < 2 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ranks = readPidFiles(pids.path());
  }
  REQUIRE(ranks.size() == 2);
  killAndReap(hvdrun);
  auto alive = survivorsAfter(ranks, std::chrono::milliseconds(5000));
  CHECK(alive.empty());  // the guardian stays for every start's ranks
  for (int pid : alive) ::kill(pid, SIGKILL);
  CHECK(leftIn(tmp.path(), std::chrono::seconds(5)).empty());
}

TEST_CASE("hvdrun SIGKILLed during the ranks' shared-memory set-up leaves no object of the job in /dev/shm",
          "[e2e][mp][orphans]") {
  std::set<std::string> before = hvdShmObjects();
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> delayMs(0, 150);
  for (int trial = 0; trial < 30; ++trial) {
    pid_t hvdrun = spawnHvdrun({"-np", "6", kCollectiveRank, "loop", "-1"}, environmentWith({}));
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs(random)));
    killAndReap(hvdrun);
  }
  // Within 5 s of the last kill nothing new may remain (other tests' live jobs come and go).
  std::set<std::string> left;
  auto deadline = Clock::now() + std::chrono::seconds(5);
  do {
    left.clear();
    for (const std::string& name : hvdShmObjects()) {
      if (!before.count(name)) left.insert(name);
    }
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  INFO("left in /dev/shm: " << (left.empty() ? std::string("nothing") : *left.begin()) << " and " << left.size() - !left.empty()
                            << " more");
  CHECK(left.empty());
}

// Runs `trials` jobs of 8 collective_rank <mode> on a machine loaded by two busy processes,
// sends SIGTERM to a random rank of each, and counts the jobs whose summary does not name
// that rank as killed by SIGTERM with exit 143; firstWrong: the first such summary.
int misnamedSigtermKills(const std::string& mode, int trials, std::string& firstWrong) {
  std::vector<pid_t> load;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", "exec yes >/dev/null", static_cast<char*>(nullptr));
      _exit(127);
    }
    load.push_back(pid);
  }
  std::mt19937 rng(20261123);
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_TIMEOUT=20"});
  o.timeout = std::chrono::seconds(60);
  int wrong = 0;
  for (int trial = 0; trial < trials; ++trial) {
    TempDir pids;
    hvd::cli::CapturedRun run;
    std::thread job([&] {
      auto r = hvd::cli::runAndCapture({HVD_HVDRUN_PATH, "-np", "8", "sh", "-c",
                                        "echo $$ > \"$1/$RANK.pid\"; exec \"$0\" " + mode, kCollectiveRank,
                                        pids.path()},
                                       o);
      if (r.isOk()) run = std::move(*r);
    });
    int victim = static_cast<int>(rng() % 8);
    std::string file = pids.path() + "/" + std::to_string(victim) + ".pid";
    auto deadline = Clock::now() + std::chrono::seconds(20);
    int pid = 0;
    while (Clock::now() < deadline && pid == 0) {
      std::ifstream in(file);
      if (!(in >> pid)) pid = 0;
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 200));  // in the loop by now
    if (pid > 0) ::kill(pid, SIGTERM);
    job.join();
    bool right = run.exitCode == 128 + SIGTERM &&
                 run.err.find("hvdrun: error: rank " + std::to_string(victim) + " was killed by SIGTERM") != std::string::npos;
    if (!right && wrong++ == 0) firstWrong = "victim " + std::to_string(victim) + ", exit " + std::to_string(run.exitCode) + ":\n" + run.err;
  }
  for (pid_t pid : load) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return wrong;
}

TEST_CASE("a rank killed by SIGTERM on a loaded machine is named as the cause, not the peer that failed for want of it, in 200 trials", "[e2e][mp][slow]") {
  // A peer sees the killed rank's sockets close and exits 1, and may be reaped before the
  // killed rank (whose exit is still in the kernel); hvdrun's own SIGTERM to the dying rank
  // then passed for its cause, and the summary named the peer (exit 1 instead of 143). Seen
  // in 1 of 40 trials from a shell before the fix, never in 300 runs of this test: a guard,
  // not a reproduction.
  std::string firstWrong;
  int wrong = misnamedSigtermKills("loop-dies-of-term", 200, firstWrong);
  INFO(firstWrong);
  CHECK(wrong == 0);
}

TEST_CASE("a rank that catches SIGTERM and shuts hvd down before dying of it is named as the cause and not the peers that failed when it left in 40 trials", "[e2e][mp][slow]") {
  // The peers fail the moment the rank shuts hvd down ("rank R shut hvd down") and are
  // reaped while it still runs; without the runtime telling hvdrun whose going failed them,
  // the summary named one of them in 5 of 20 trials (exit 1 instead of 143).
  std::string firstWrong;
  int wrong = misnamedSigtermKills("loop-cleans-up-on-term", 40, firstWrong);
  INFO(firstWrong);
  CHECK(wrong == 0);
}
