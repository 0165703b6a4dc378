// tests/e2e/preemption_e2e_test.cc: the preemption notice on one machine: hvdrun raises the
// ranks' flag and forwards the signal; the runtime lets ranks agree on one step.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "cli/plan/shell_quote.h"
#include "tests/support/hvdrun_runner.h"

namespace {

// Starts hvdrun in the background, waits until every rank printed "started", sends
// SIGUSR2 to hvdrun, and returns what the shell saw ("rc=<hvdrun's code>" last).
hvd::cli::CapturedRun preemptAfterStart(const std::vector<std::string>& hvdrunArgs, int ranks) {
  hvd::test::TempDir dir;
  std::vector<std::string> command{HVD_HVDRUN_PATH};
  command.insert(command.end(), hvdrunArgs.begin(), hvdrunArgs.end());
  std::string out = hvd::cli::shellQuote(dir.path() + "/out");
  std::string script = hvd::cli::shellJoin(command) + " >" + out + " 2>&1 & pid=$!\n" +
                       "i=0; while [ \"$(grep -c started " + out + " 2>/dev/null)\" != " + std::to_string(ranks) +
                       " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
                       "kill -USR2 $pid; wait $pid; echo rc=$?; cat " + out + "\n";
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(30);
  auto run = hvd::cli::runAndCapture({"sh", "-c", script}, options);
  REQUIRE(run.isOk());
  return *run;
}

}  // namespace

TEST_CASE("SIGUSR2 to hvdrun reaches every rank and they checkpoint at the same step", "[e2e][mp][preempt]") {
  auto run = preemptAfterStart({"-np", "3", HVD_COLLECTIVE_RANK_PATH, "preempt"}, 3);
  INFO(run.out);
  CHECK(run.out.rfind("rc=0\n", 0) == 0);
  std::smatch m;
  REQUIRE(std::regex_search(run.out, m, std::regex(R"(checkpoint at step (\d+))")));
  for (int r = 0; r < 3; ++r) {
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:checkpoint at step " + m[1].str()) != std::string::npos);
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:notice reached rank " + std::to_string(r)) != std::string::npos);
  }
  CHECK(run.out.find("hvdrun: preemption notice (SIGUSR2) passed to every rank\n") != std::string::npos);
}

TEST_CASE("with --requeue outside Slurm the notice still reaches the ranks and hvdrun says there is nothing to requeue", "[e2e][mp][preempt]") {
  auto run = preemptAfterStart({"-np", "2", "--requeue", HVD_COLLECTIVE_RANK_PATH, "preempt"}, 2);
  INFO(run.out);
  CHECK(run.out.rfind("rc=0\n", 0) == 0);
  CHECK(run.out.find("hvdrun: warning: --requeue: not inside a Slurm job, nothing to requeue\n") != std::string::npos);
}

TEST_CASE("with --preempt-grace, ranks that ignore the notice are stopped after it", "[e2e][mp][preempt]") {
  auto start = std::chrono::steady_clock::now();
  auto run = preemptAfterStart({"-np", "2", "--requeue", "--preempt-grace", "0.5", "sh", "-c",
                                "trap 'echo notice' USR2; echo started; while :; do sleep 0.1; done"}, 2);
  INFO(run.out);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(run.out.find("[0]<stdout>:notice") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:notice") != std::string::npos);
  CHECK(run.out.find("ranks still running 0 s later (--preempt-grace) were stopped") != std::string::npos);
}

TEST_CASE("outside Slurm the flag file lies in a private directory with an unpredictable name, made only for a notice and removed", "[e2e][preempt]") {
  auto env = hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  hvd::cli::RunOptions o;
  o.env = env;
  o.timeout = std::chrono::seconds(30);
  // No notice: nothing is made, so a SIGKILLed hvdrun leaves nothing in /tmp.
  auto first = hvd::test::runHvdrun(
      {"-np", "1", "--no-prefix", "sh", "-c", "echo \"$HVD_PREEMPT_FILE\"; test -e \"$(dirname \"$HVD_PREEMPT_FILE\")\" || echo absent"}, o);
  auto second = hvd::test::runHvdrun({"-np", "1", "--no-prefix", "sh", "-c", "echo \"$HVD_PREEMPT_FILE\""}, o);
  INFO(first.out << first.err);
  REQUIRE(first.exitCode == 0);
  std::smatch m;
  REQUIRE(std::regex_search(first.out, m, std::regex(R"((/\S+/hvdrun-[0-9a-f]{16})/preempt\nabsent\n)")));
  CHECK(second.out.find(m[1].str()) == std::string::npos);  // a new name each run
  // A notice: the directory is this user's alone, and gone when hvdrun ends.
  auto noticed = preemptAfterStart({"-np", "1", "--no-prefix", "sh", "-c",
                                    "trap 'stat -c %a \"$(dirname \"$HVD_PREEMPT_FILE\")\"; cat \"$HVD_PREEMPT_FILE\"; "
                                    "echo \"$HVD_PREEMPT_FILE\"; exit 0' USR2; echo started; while :; do sleep 0.1; done"},
                                   1);
  INFO(noticed.out);
  CHECK(noticed.out.rfind("rc=0\n", 0) == 0);
  REQUIRE(std::regex_search(noticed.out, m, std::regex(R"(700\nSIGUSR2 at \S+\n((/\S+/hvdrun-[0-9a-f]{16})/preempt)\n)")));
  CHECK_FALSE(std::filesystem::exists(m[2].str()));
}

TEST_CASE("an HVD_PREEMPT_SIGNAL that is not USR1 or USR2 fails init naming it", "[e2e][preempt]") {
  auto o = hvd::test::withEnv(hvd::test::environmentWith({"HVD_PREEMPT_SIGNAL=TERM", "HVD_RANK", "HVD_SIZE"}));
  auto run = hvd::cli::runAndCapture({HVD_COLLECTIVE_RANK_PATH, "check"}, o);
  REQUIRE(run.isOk());
  CHECK(run->exitCode == 2);
  CHECK(run->err.find("HVD_PREEMPT_SIGNAL='TERM' is not a preemption signal") != std::string::npos);
}
