// tests/e2e/leftover_processes_e2e_test.cc: what a rank leaves running outside its session
// (a daemon: a child that calls setsid, out of reach of the session's signals) is stopped
// when the job ends, however it ends, and hvdrun says so.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::survivorsAfter;
using hvd::test::TempDir;

namespace {

// Each rank starts `sleep 300` in a session of its own, writes its pid to dir/daemon.R,
// then exits with `code`.
std::vector<std::string> daemonizingRanks(const std::string& dir, int code) {
  return {"sh", "-c",
          "setsid sh -c 'echo $$ > " + dir + "/daemon.$HOROVOD_RANK; exec sleep 300' & sleep 0.5; exit " +
              std::to_string(code)};
}

std::vector<int> daemonPids(const std::string& dir, int ranks) {
  std::vector<int> pids;
  for (int r = 0; r < ranks; ++r) {
    int pid = 0;
    std::ifstream(dir + "/daemon." + std::to_string(r)) >> pid;
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

TEST_CASE("processes the ranks left running in sessions of their own are stopped when the job ends well or fails",
          "[e2e][mp]") {
  const bool haveMpirun = hvd::test::haveMpirun();
  for (auto [code, mpi] : {std::pair{0, false}, std::pair{3, false}, std::pair{0, true}}) {
    if (mpi && !haveMpirun) continue;
    INFO("ranks exit " << code << (mpi ? " under --mpi (the task shim stops them)" : ""));
    TempDir dir;
    hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
    options.timeout = std::chrono::seconds(30);
    std::vector<std::string> args{"-np", "2", "--kill-grace", "2"};
    if (mpi) args.insert(args.begin(), "--mpi");
    for (auto& a : daemonizingRanks(dir.path(), code)) args.push_back(a);
    auto run = runHvdrun(args, options);
    INFO(run.err);
    CHECK(run.exitCode == code);
    std::vector<int> daemons = daemonPids(dir.path(), 2);
    REQUIRE(daemons.size() == 2);
    // Before, both slept on for 300 s with init as their parent.
    auto left = survivorsAfter(daemons, std::chrono::milliseconds(1000));
    CHECK(left.empty());
    for (int pid : left) ::kill(pid, SIGKILL);
    if (mpi) {  // each rank's shim stops its own, and says so in the rank's stderr
      CHECK(run.err.find("hvdrun: stopped 1 process(es) the ranks left running outside their sessions on ") !=
            std::string::npos);
    } else {
      CHECK(run.err.find("hvdrun: stopped 2 process(es) the ranks left running outside their sessions: ") !=
            std::string::npos);
    }
  }
}

TEST_CASE("a process a rank leaves that ends by itself moments later is neither stopped nor reported", "[e2e][mp]") {
  // As multiprocessing's resource tracker (spawn, forkserver: a DataLoader's workers) ends
  // once its rank's pipe closes. Before, hvdrun SIGTERMed it at once and said it had
  // stopped a process the ranks left running.
  const bool haveMpirun = hvd::test::haveMpirun();
  for (bool mpi : {false, true}) {
    if (mpi && !haveMpirun) continue;
    INFO((mpi ? "under --mpi (the task shim)" : "forked by hvdrun"));
    TempDir dir;
    hvd::cli::RunOptions options = hvd::test::withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
    options.timeout = std::chrono::seconds(30);
    std::vector<std::string> args{"-np", "2"};
    if (mpi) args.insert(args.begin(), "--mpi");
    // The child outlives the rank by 0.1 s and writes a file when it ends by itself.
    for (auto& a : {"sh", "-c", "setsid sh -c 'sleep 0.1; touch $0/done.$HOROVOD_RANK' \"$0\" & exit 0"}) {
      args.push_back(a);
    }
    args.push_back(dir.path());
    auto run = runHvdrun(args, options);
    INFO(run.err);
    CHECK(run.exitCode == 0);
    CHECK(run.err.find("left running outside their sessions") == std::string::npos);
    for (int r = 0; r < 2; ++r) CHECK(std::ifstream(dir.path() + "/done." + std::to_string(r)).good());
  }
}
