// tests/e2e/job_control_e2e_test.cc: Ctrl-Z (SIGTSTP) and fg/bg (SIGCONT) on hvdrun, as a
// shell sends them: the job stops as a whole and goes on as a whole, and time stopped does
// not count against the ranks' timeouts.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::spawnHvdrun;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

const std::string kCollectiveRank = HVD_COLLECTIVE_RANK_PATH;
const std::string kTestRank = HVD_TEST_RANK_PATH;

// /proc/<pid>/stat's fields after the command's closing parenthesis ("S 123 ..."), or "".
std::string statTail(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), {});
  auto close = all.rfind(')');
  return close == std::string::npos ? "" : all.substr(close + 2);
}

std::string commOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

// hvdrun's children but its guardian: the ranks.
std::vector<pid_t> ranksOf(pid_t hvdrun) {
  std::vector<pid_t> ranks;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::istringstream fields(statTail(pid));
    char state = 0;
    pid_t parent = 0;
    if (fields >> state >> parent && parent == hvdrun && commOf(pid) != "hvdrun") ranks.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return ranks;
}

bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto until = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// Reads from fd into *out until `count` occurrences of `text` are in it or `limit` passes.
bool readUntil(int fd, std::string* out, const std::string& text, int count, std::chrono::milliseconds limit) {
  auto occurrences = [&] {
    int n = 0;
    for (size_t at = out->find(text); at != std::string::npos; at = out->find(text, at + 1)) ++n;
    return n;
  };
  auto until = Clock::now() + limit;
  char buf[4096];
  while (occurrences() < count) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return occurrences() >= count;
    out->append(buf, static_cast<size_t>(n));
  }
  return true;
}

// Waits for hvdrun to end (up to `limit`, then SIGKILL); its output is drained into *out.
int finish(pid_t hvdrun, int fd, std::string* out, std::chrono::milliseconds limit) {
  auto until = Clock::now() + limit;
  readUntil(fd, out, "\x01never", 1, limit);  // to EOF, which comes as hvdrun ends
  ::close(fd);
  int status = 0;
  bool ended = waitFor([&] { return ::waitpid(hvdrun, &status, WNOHANG) == hvdrun; },
                       std::max(std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()), 2000ms));
  if (!ended) {
    ::kill(hvdrun, SIGKILL);
    ::waitpid(hvdrun, &status, 0);
    return -1;
  }
  return status;
}

}  // namespace

TEST_CASE("Ctrl-Z on hvdrun stops every rank with it and continuing hvdrun continues them", "[e2e][mp]") {
  // One process a rank (a shell would sit in D behind a stopped vfork child).
  hvd::test::TempDir pids;
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", "2", kTestRank, "sleep", "3"},
                             environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_TEST_PIDDIR=" + pids.path()}),
                             out[1], /*asShellJob=*/true);
  ::close(out[1]);
  REQUIRE(waitFor([&] { return hvd::test::readPidFiles(pids.path()).size() == 2; }, 10s));
  auto ranks = hvd::test::readPidFiles(pids.path());

  ::kill(hvdrun, SIGTSTP);
  CHECK(waitFor([&] { return hvd::test::processState(hvdrun) == 'T'; }, 3s));
  for (pid_t rank : ranks) {
    INFO("rank process " << rank << " state " << hvd::test::processState(rank));
    CHECK(waitFor([&] { return hvd::test::processState(rank) == 'T'; }, 3s));
  }
  std::this_thread::sleep_for(1s);
  for (pid_t rank : ranks) CHECK(hvd::test::processState(rank) == 'T');

  ::kill(hvdrun, SIGCONT);
  CHECK(waitFor([&] { return hvd::test::processState(ranks[0]) != 'T' && hvd::test::processState(ranks[1]) != 'T'; }, 3s));
  std::string text;
  int status = finish(hvdrun, out[0], &text, 20s);
  INFO(text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a job held by Ctrl-Z for longer than HVD_TIMEOUT finishes its collectives once continued", "[e2e][mp]") {
  // Rank 0 computes (0.6 s of its own CPU time) while the others wait for it in an
  // allreduce; the job is stopped meanwhile for 3 s, past their 2 s timeout. Three ranks on
  // shared memory wait in the host arena, two over TCP in poll().
  const bool tcp = GENERATE(false, true);
  INFO((tcp ? "TCP, np=2" : "shared memory, np=3"));
  const std::string np = tcp ? "2" : "3";
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", np, kCollectiveRank, "compute-first", "600"},
                             environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_TIMEOUT=2",
                                              std::string("HVD_SHARED_MEMORY=") + (tcp ? "0" : "1")}),
                             out[1], /*asShellJob=*/true);
  ::close(out[1]);
  std::string text;
  REQUIRE(readUntil(out[0], &text, "computing ", std::stoi(np), 20s));
  std::this_thread::sleep_for(100ms);  // the others into their wait
  ::kill(hvdrun, SIGTSTP);
  auto ranks = ranksOf(hvdrun);
  for (pid_t rank : ranks) CHECK(waitFor([&] { return hvd::test::processState(rank) == 'T'; }, 3s));
  std::this_thread::sleep_for(3s);
  ::kill(hvdrun, SIGCONT);
  int status = finish(hvdrun, out[0], &text, 30s);
  INFO(text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string sum = tcp ? "3 2" : "6 3";
  for (int r = 0; r < std::stoi(np); ++r) {
    CHECK(text.find("[" + std::to_string(r) + "]<stdout>:done " + std::to_string(r) + " " + sum + "\n") !=
          std::string::npos);
  }
}

TEST_CASE("a job held by Ctrl-Z past the stall shutdown time neither warns of a stall nor shuts down once continued",
          "[e2e][mp]") {
  // Rank 1 waits for computing rank 0 in an allreduce, as above; the stall inspector warns
  // after 2 s of that and ends the job (exit 119) after 3, and the job is held for 4 s.
  hvd::test::TempDir logs;
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", "2", "--output-filename", logs.path(), kCollectiveRank, "compute-first", "600"},
                             environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HOROVOD_STALL_CHECK_TIME_SECONDS=2",
                                              "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=3"}),
                             out[1], /*asShellJob=*/true);
  ::close(out[1]);
  std::string text;
  REQUIRE(readUntil(out[0], &text, "computing ", 2, 20s));
  std::this_thread::sleep_for(100ms);
  ::kill(hvdrun, SIGTSTP);
  for (pid_t rank : ranksOf(hvdrun)) CHECK(waitFor([&] { return hvd::test::processState(rank) == 'T'; }, 3s));
  std::this_thread::sleep_for(4s);
  ::kill(hvdrun, SIGCONT);
  int status = finish(hvdrun, out[0], &text, 30s);
  std::ifstream err(logs.path() + "/rank.0/stderr");
  std::string stderr0((std::istreambuf_iterator<char>(err)), {});
  INFO(text << stderr0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(stderr0.find("stall") == std::string::npos);
  CHECK(text.find("[1]<stdout>:done 1 3 2\n") != std::string::npos);
}
