// tests/e2e/restart_e2e_test.cc: hvdrun --max-restarts on this machine, with real ranks: a
// rank's failure stops the others and starts every rank again, telling each start its
// count (torchrun's TORCHELASTIC_RESTART_COUNT); the runtime re-forms in the new start;
// restarts run out with the last failure's exit code; an interrupt is never restarted;
// --output-filename keeps every start's output.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli/os/machine.h"
#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::readPidFiles;
using hvd::test::runHvdrun;
using hvd::test::spawnHvdrun;
using hvd::test::survivorsAfter;
using hvd::test::TempDir;

namespace {

const std::string kRank = HVD_TEST_RANK_PATH;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The file's text, or "" when it cannot be read (the comparison then says so).
std::string fileText(const std::string& path) {
  auto text = hvd::cli::readTextFile(path);
  return text ? *text : std::string();
}

}  // namespace

TEST_CASE("a job whose rank fails in its first start succeeds when every rank is started again", "[e2e]") {
  auto run = runHvdrun({"-np", "3", "--max-restarts", "2", kRank, "fail-starts", "1", "1", "0.3"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  // Every rank ran twice, told which start it was and how many restarts it may have.
  for (int r = 0; r < 3; ++r) {
    CHECK(count(run.out, "[" + std::to_string(r) + "]<stdout>:start 0 of 2 restarts") == 1);
    CHECK(count(run.out, "[" + std::to_string(r) + "]<stdout>:start 1 of 2 restarts") == 1);
  }
  CHECK(count(run.out, "start 2 of") == 0);
  CHECK(run.err.find("hvdrun: error: rank 1 exited with code 3") != std::string::npos);
  CHECK(run.err.find("hvdrun: starting every rank again: restart 1 of 2 (--max-restarts)") != std::string::npos);
  CHECK(count(run.err, "starting every rank again") == 1);
  // The note on threads is said once, not at each start.
  CHECK(count(run.err, "OMP_NUM_THREADS=") <= 1);
}

TEST_CASE("when the restarts run out the job ends with the last failure's code and says every start failed", "[e2e]") {
  auto run = runHvdrun({"-np", "2", "--max-restarts", "2", kRank, "fail-starts", "0", "99", "5"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 3);
  CHECK(count(run.out, "start ") == 6);  // 2 ranks, 3 starts
  CHECK(count(run.err, "hvdrun: error: rank 0 exited with code 3") == 3);
  CHECK(run.err.find("restart 2 of 2 (--max-restarts)") != std::string::npos);
  CHECK(run.err.find("hvdrun: the job failed in each of its 3 starts (--max-restarts 2)") != std::string::npos);
}

TEST_CASE("without --max-restarts a failed rank still ends the job after one start", "[e2e]") {
  auto run = runHvdrun({"-np", "2", kRank, "fail-starts", "1", "1", "5"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 3);
  CHECK(count(run.out, "start 0 of 0 restarts") == 2);
  CHECK(run.err.find("starting every rank again") == std::string::npos);
}

TEST_CASE("the runtime forms its world again in a restarted start after a rank was killed mid-allreduce", "[e2e]") {
  // Start 0: rank 2 SIGKILLs itself after 20 allreduces, the others fail in theirs; start 1:
  // a fresh rendezvous and fresh links, and every rank sums 1 + 2 + 3. Under --mpi each
  // start is an mpirun of its own, whose shims learn the start from hvdrun.
  for (bool mpi : {false, true}) {
    if (mpi && !hvd::test::haveMpirun()) continue;
    std::vector<std::string> args{"-np", "3", "--max-restarts", "1", HVD_COLLECTIVE_RANK_PATH, "restarted", "2"};
    if (mpi) args.insert(args.begin(), "--mpi");
    auto run = runHvdrun(args, hvd::test::withTimeout(std::chrono::seconds(60)));
    INFO((mpi ? "--mpi: " : "") << run.out << run.err);
    CHECK(run.exitCode == 0);
    CHECK(run.err.find("hvdrun: error: rank 2 ") != std::string::npos);
    CHECK(run.err.find("restart 1 of 1 (--max-restarts)") != std::string::npos);
    for (int r = 0; r < 3; ++r) CHECK(count(run.out, "[" + std::to_string(r) + "]<stdout>:start 1 sum 6") == 1);
  }
}

TEST_CASE("output files keep every start's lines and the summary every start's report", "[e2e]") {
  TempDir dir;
  const std::string out = dir.path() + "/logs";
  auto run = runHvdrun({"-np", "2", "--max-restarts", "1", "--output-filename", out, kRank, "fail-starts", "1", "1",
                        "0.2"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(fileText(out + "/rank.1/stdout") == "start 0 of 1 restarts\nstart 1 of 1 restarts\n");
  CHECK(fileText(out + "/rank.1/stderr") == "rank 1 failing in start 0\n");
  CHECK(fileText(out + "/rank.0/stdout") == "start 0 of 1 restarts\nstart 1 of 1 restarts\n");
  const std::string summary = fileText(out + "/summary");
  CHECK(summary.find("rank 1 exited with code 3") != std::string::npos);
  CHECK(summary.find("restart 1 of 1 (--max-restarts)") != std::string::npos);
}

TEST_CASE("the timeline of a start that failed is kept beside the last start's", "[e2e][timeline]") {
  // Each start's ranks wrote trace.json and trace.rankN.json again: the failed start's trace,
  // the one that shows the failure, was gone before hvdrun merged the last one.
  TempDir dir;
  const std::string path = dir.path() + "/trace.json";
  auto run = runHvdrun({"-np", "3", "--max-restarts", "1", "--timeline-filename", path, HVD_COLLECTIVE_RANK_PATH,
                        "restarted", "2"},
                       hvd::test::withTimeout(std::chrono::seconds(60)));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  const std::string first = fileText(dir.path() + "/trace.attempt0.json");
  const std::string last = fileText(path);
  // Start 0 allreduced up to 20 times on every rank; start 1 once.
  CHECK(count(first, "\"ALLREDUCE\"") > count(last, "\"ALLREDUCE\""));
  CHECK(count(last, "\"ALLREDUCE\"") > 0);
  CHECK(first.find("\"process_name\"") != std::string::npos);
  CHECK(run.err.find("hvdrun: the timeline of start 1 of 2 is in " + dir.path() + "/trace.attempt0.json\n") !=
        std::string::npos);
  for (int r = 1; r < 3; ++r) CHECK(::access((dir.path() + "/trace.rank" + std::to_string(r) + ".json").c_str(), F_OK) != 0);
}

TEST_CASE("an interrupted job is not restarted and leaves no rank behind", "[e2e]") {
  TempDir pids;
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", "2", "--max-restarts", "3", kRank, "fail-starts", "9", "0", "30"},
                             environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}), pipeFds[1]);
  ::close(pipeFds[1]);
  // Both ranks of the first start are up before the interrupt.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (readPidFiles(pids.path()).size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(readPidFiles(pids.path()).size() == 2);
  const std::vector<int> ranks = readPidFiles(pids.path());
  ::kill(hvdrun, SIGINT);
  int status = 0;
  REQUIRE(::waitpid(hvdrun, &status, 0) == hvdrun);
  const std::string out = hvd::test::readToEnd(pipeFds[0]);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(count(out, "start 0 of 3 restarts") == 2);
  CHECK(count(out, "start 1 of") == 0);
  CHECK(survivorsAfter(ranks, std::chrono::seconds(5)).empty());
}

TEST_CASE("a restart count that is not a whole number from 0 is refused naming it", "[e2e]") {
  for (const char* bad : {"-1", "two", "1.5", "10001"}) {
    auto run = runHvdrun({"-np", "1", "--max-restarts", bad, "true"});
    INFO(bad << ": " << run.err);
    CHECK(run.exitCode == 2);
    CHECK(run.err.find("--max-restarts expects a whole number from 0 to 10000, got '" + std::string(bad) + "'") !=
          std::string::npos);
  }
}

TEST_CASE("the plan shows the restarts every rank is told of", "[e2e]") {
  auto run = runHvdrun({"plan", "-np", "2", "--max-restarts", "4", "--format", "sh", "--rank", "1", "true"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("TORCHELASTIC_MAX_RESTARTS=4") != std::string::npos);
  CHECK(run.out.find("TORCHELASTIC_RESTART_COUNT=0") != std::string::npos);
}
