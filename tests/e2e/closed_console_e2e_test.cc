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
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
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

TEST_CASE("a file size limit met by hvdrun's output leaves the job running and says which output is incomplete",
          "[e2e]") {
  // ulimit -f: hvdrun was killed by SIGXFSZ at its first write past the limit (exit 153, no
  // word why), its ranks with it, and the output files stayed empty.
  hvd::test::TempDir dir;
  hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID"}));
  options.timeout = 30s;
  const std::string rankScript = "head -c 300000 /dev/zero | tr '\\0' x; echo; echo done";
  auto files = hvd::cli::runAndCapture({"bash", "-c",
                                        "ulimit -f 100; exec \"$0\" -np 2 --output-filename " + dir.path() +
                                            "/out sh -c \"" + rankScript + "\" | tail -c 200",
                                        HVD_HVDRUN_PATH},
                                       options);
  REQUIRE(files.isOk());
  INFO(files->err);
  CHECK(files->exitCode == 0);  // tail's; hvdrun's own below
  CHECK(files->out.find("<stdout>:done") != std::string::npos);
  CHECK(files->err.find("/stdout: File too large; that rank's output file is incomplete") != std::string::npos);
  CHECK(files->err.find("hvdrun: error: 2 of the ranks' output files in " + dir.path() + "/out are incomplete") !=
        std::string::npos);
  // The console a file: the same limit, met by hvdrun's stdout.
  auto console = hvd::cli::runAndCapture(
      {"bash", "-c", "ulimit -f 100; \"$0\" -np 2 sh -c \"" + rankScript + "\" > " + dir.path() + "/log; echo rc=$?",
       HVD_HVDRUN_PATH},
      options);
  REQUIRE(console.isOk());
  INFO(console->err);
  CHECK(console->out == "rc=3\n");
  CHECK(console->err.find("hvdrun: error: the ranks' output is incomplete (writing stdout: File too large)") !=
        std::string::npos);
  // A rank's own writes past the limit still end it by SIGXFSZ, as they would without hvdrun.
  auto rank = hvd::cli::runAndCapture(
      {"bash", "-c", "ulimit -f 100; exec \"$0\" -np 1 sh -c 'exec head -c 300000 /dev/zero > " + dir.path() + "/big'",
       HVD_HVDRUN_PATH},
      options);
  REQUIRE(rank.isOk());
  CHECK(rank->exitCode == 128 + SIGXFSZ);
  CHECK(rank->err.find("rank 0 was killed by SIGXFSZ") != std::string::npos);
}

namespace {

// Runs `hvdrun ARGS` `times` times in a pipeline built by `pipeline` ("HVDRUN" stands for
// hvdrun and its arguments), and counts hvdrun's exit codes.
std::map<int, int> exitCodesOf(const std::string& pipeline, int times) {
  std::string script = "for i in $(seq " + std::to_string(times) + "); do " + pipeline + "; echo ${PIPESTATUS[0]}; done";
  hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  options.timeout = std::chrono::seconds(240);
  auto run = hvd::cli::runAndCapture({"bash", "-c", script, HVD_HVDRUN_PATH}, options);
  REQUIRE(run.isOk());
  std::map<int, int> codes;
  std::istringstream lines(run->out);
  for (std::string line; std::getline(lines, line);) ++codes[std::atoi(line.c_str())];
  std::string seen;
  for (auto [code, times] : codes) seen += " exit " + std::to_string(code) + " x" + std::to_string(times);
  UNSCOPED_INFO("exit codes:" << seen << "\n" << run->err.substr(0, 2000));
  return codes;
}

}  // namespace

TEST_CASE("a rank that failed by itself is the root cause when the console's reader went away as well, 200 times",
          "[e2e][mp][slow]") {
  // Rank 1 exits 3 right after its one line; `head -1` goes with the first line. Whichever
  // hvdrun hears of first, the broken pipe or rank 1's end, rank 1's failure came first.
  const std::string failing = "sh -c 'echo x; [ $HOROVOD_RANK = 1 ] && exit 3; sleep 5'";
  CHECK(exitCodesOf("\"$0\" -np 2 " + failing + " 2>&1 | head -1 >/dev/null", 200) == std::map<int, int>{{3, 200}});
  // Only stdout piped, every rank writing 8 lines first.
  const std::string eight = "sh -c 'for i in 1 2 3 4 5 6 7 8; do echo $i; done; [ $HOROVOD_RANK = 1 ] && exit 3; sleep 5'";
  CHECK(exitCodesOf("\"$0\" -np 2 " + eight + " 2>/dev/null | head -1 >/dev/null", 60) == std::map<int, int>{{3, 60}});
  // Rank 0 silent for its first second: the only writes after `head` has gone are rank 1's
  // one line and hvdrun's own.
  const std::string quiet = "sh -c 'if [ $HOROVOD_RANK = 1 ]; then echo x; exit 3; fi; sleep 1; echo y; sleep 5'";
  CHECK(exitCodesOf("\"$0\" -np 2 " + quiet + " 2>&1 | head -1 >/dev/null", 30) == std::map<int, int>{{3, 30}});
}

TEST_CASE("with no rank failed first, a console whose reader went away still ends the job with 141", "[e2e][mp]") {
  const std::string writing = "sh -c 'while :; do echo x; done'";
  CHECK(exitCodesOf("\"$0\" -np 2 " + writing + " 2>/dev/null | head -1 >/dev/null", 10) == std::map<int, int>{{141, 10}});
}

TEST_CASE("a rank's failure before hvdrun is told to stop stays the root cause, its code the job's", "[e2e][mp]") {
  // Rank 1 exits 3; a process it left behind sends hvdrun SIGTERM once rank 1 is reaped
  // (kill -0 finds it until then), while hvdrun is stopping the others. 20 times: hvdrun
  // exits 3 every time, and its summary names rank 1 and the SIGTERM too.
  const std::string script =
      "for i in $(seq 20); do \"$0\" -np 2 --kill-grace 3 sh -c '[ $HOROVOD_RANK = 1 ] && { (while kill -0 $$ "
      "2>/dev/null; do :; done; kill -TERM $PPID) & exit 3; }; sleep 5' 2>>\"$1\"; echo $?; done";
  TempDir dir;
  const std::string err = dir.path() + "/stderr";
  hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  options.timeout = std::chrono::seconds(120);
  auto run = hvd::cli::runAndCapture({"bash", "-c", script, HVD_HVDRUN_PATH, err}, options);
  REQUIRE(run.isOk());
  std::map<int, int> codes;
  std::istringstream lines(run->out);
  for (std::string line; std::getline(lines, line);) ++codes[std::atoi(line.c_str())];
  CHECK(codes == std::map<int, int>{{3, 20}});
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("hvdrun: error: rank 1 exited with code 3") != std::string::npos);
  CHECK(text.find("hvdrun: interrupted by SIGTERM too, while the job was ending") != std::string::npos);
  CHECK(text.find("interrupted by SIGTERM; stopped") == std::string::npos);
}
