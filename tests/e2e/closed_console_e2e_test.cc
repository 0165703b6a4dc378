// tests/e2e/closed_console_e2e_test.cc: hvdrun's stdout stops taking output for good: its
// reader went away (`hvdrun ... | head`), or its file system is full. The job must neither
// run on unseen (before, `hvdrun -np 2 yes | head -2` never ended) nor end as if all of its
// output had been written.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::spawnHvdrun;
using hvd::test::TempDir;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Reads from fd until `bytes` have come (or EOF), as `head -c` would, and, with pidDir, on
// until `ranks` pid files are there (one rank's output can fill `bytes` before the next has
// started, on a loaded machine), for at most 20 s.
void readSome(int fd, size_t bytes, const std::string& pidDir = "", size_t ranks = 0) {
  char buf[4096];
  size_t got = 0;
  auto deadline = Clock::now() + 20s;
  auto waiting = [&] { return got < bytes || (!pidDir.empty() && hvd::test::readPidFiles(pidDir).size() < ranks); };
  while (waiting() && Clock::now() < deadline) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
}

// hvdrun's wait status once it has ended within `limit`; it is killed (and the test fails)
// otherwise.
int statusWithin(pid_t hvdrun, std::chrono::milliseconds limit) {
  int status = 0;
  for (auto deadline = Clock::now() + limit; Clock::now() < deadline; std::this_thread::sleep_for(20ms)) {
    if (::waitpid(hvdrun, &status, WNOHANG) == hvdrun) return status;
  }
  ::kill(hvdrun, SIGKILL);
  ::waitpid(hvdrun, &status, 0);
  FAIL("hvdrun did not end within " << limit.count() << " ms of its stdout's reader going away");
  return status;
}

// Runs hvdrun with its stdout into a pipe, reads `bytes` of it, closes the pipe and returns
// hvdrun's wait status.
int runThenCloseReader(const std::vector<std::string>& args, size_t bytes, const std::string& pidDir = "",
                       size_t ranks = 0) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);  // else hvdrun would hold the read end too
  pid_t hvdrun = spawnHvdrun(args, environmentWith({"SLURM_JOB_ID"}), fds[1]);
  ::close(fds[1]);
  readSome(fds[0], bytes, pidDir, ranks);
  ::close(fds[0]);
  return statusWithin(hvdrun, 15s);
}

}  // namespace

TEST_CASE("hvdrun piped into a reader that exits stops ranks that keep writing and exits 141 as for SIGPIPE",
          "[e2e]") {
  TempDir pids;
  int status = runThenCloseReader(
      {"-np", "2", "--kill-grace", "2", "sh", "-c", "echo $$ > " + pids.path() + "/$HOROVOD_RANK.pid; exec yes"}, 8192,
      pids.path(), 2);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 141);
  auto ranks = hvd::test::readPidFiles(pids.path());
  CHECK(ranks.size() == 2);
  CHECK(hvd::test::survivorsAfter(ranks, 2000ms).empty());
}

TEST_CASE("under --mpi hvdrun piped into a reader that exits stops mpirun and its ranks and exits 141", "[e2e][mpi]") {
  if (!hvd::test::haveMpirun()) hvd::test::skipTest("mpirun is not installed");
  TempDir pids;
  int status = runThenCloseReader({"--mpi", "-np", "2", "--kill-grace", "2", "sh", "-c",
                                   "echo $$ > " + pids.path() + "/$HOROVOD_RANK.pid; exec yes"},
                                  8192, pids.path(), 2);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 141);
  auto ranks = hvd::test::readPidFiles(pids.path());
  CHECK(ranks.size() == 2);
  CHECK(hvd::test::survivorsAfter(ranks, 2000ms).empty());
}

TEST_CASE("ranks gone quiet after the line that found hvdrun's stdout closed are stopped all the same", "[e2e]") {
  // The reader takes the first line and goes; the second line finds it gone, and then the
  // ranks write nothing for a minute: nothing but that failed write can tell hvdrun.
  auto started = Clock::now();
  int status = runThenCloseReader({"-np", "2", "--kill-grace", "2", "sh", "-c", "echo one; sleep 0.5; echo two; sleep 60"}, 1);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 141);
  CHECK(Clock::now() - started < 10s);
}

TEST_CASE("hvdrun whose stdout is a full disk says the ranks' output there is incomplete and exits 3", "[e2e]") {
  hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID"}));
  options.timeout = 20s;
  auto run = hvd::cli::runAndCapture({"sh", "-c", "exec \"$0\" -np 2 echo hi > /dev/full", HVD_HVDRUN_PATH}, options);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 3);
  CHECK(run->err.find("stdout") != std::string::npos);
  CHECK(run->err.find("No space left on device") != std::string::npos);
}

TEST_CASE("a job that failed keeps its own exit code when its stdout is a full disk as well", "[e2e]") {
  hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID"}));
  options.timeout = 20s;
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c", "exec \"$0\" -np 2 sh -c 'echo hi; exit 5' > /dev/full", HVD_HVDRUN_PATH}, options);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 5);
  CHECK(run->err.find("No space left on device") != std::string::npos);
}
