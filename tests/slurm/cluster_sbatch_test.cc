// tests/slurm/cluster_sbatch_test.cc: job scripts from `hvdrun sbatch --submit`, run by
// the real test cluster: placement and GPUs on 3 nodes, a failing rank failing the job,
// arguments reaching ranks verbatim, and preemption with requeue (both through hvdrun, as
// Slurm sends the notice before the time limit, and straight to the ranks by scancel).
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/plan/shell_quote.h"
#include "tests/slurm/slurm_jobs.h"
#include "tests/support/hvdrun_runner.h"

namespace {

const std::string kHvdrun = HVD_HVDRUN_PATH;
const std::string kRank = HVD_TEST_RANK_PATH;
const std::string kCollectiveRank = HVD_COLLECTIVE_RANK_PATH;

using hvd::test::jobField;
using hvd::test::readFile;
using hvd::test::requireTestbed;
using hvd::test::waitFor;
using hvd::test::waitForEnd;

hvd::cli::CapturedRun run(const std::vector<std::string>& argv, std::chrono::seconds timeout = std::chrono::seconds(30)) {
  return hvd::test::runCommand(argv, timeout);
}

// Submits from `dir` (the job's submit directory, where its output files go); the job id.
std::string submit(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> command{kHvdrun, "sbatch", "--submit"};
  command.insert(command.end(), args.begin(), args.end());
  auto r = run({"sh", "-c", "cd " + hvd::cli::shellQuote(dir) + " && exec " + hvd::cli::shellJoin(command)});
  INFO(r.err);
  REQUIRE(r.exitCode == 0);
  std::string id = r.out.substr(0, r.out.find('\n'));
  REQUIRE(std::regex_match(id, std::regex("[0-9]+")));
  return id;
}

size_t countOf(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a generated script for 3 nodes runs one rank per GPU on every node and the output file holds every rank", "[cluster][sbatch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string id = submit(dir.path(), {"--nodes", "3", "--gpus-per-node", "2", "--job-name", "place", "--", kRank, "identity"});
  waitForEnd(id);
  CHECK(jobField(id, "JobState") == "COMPLETED");
  CHECK(jobField(id, "ExitCode") == "0:0");
  std::string out = readFile(dir.path() + "/place-" + id + ".out");
  INFO(out << readFile(dir.path() + "/place-" + id + ".err"));
  std::regex line(R"(\[(\d)\]<stdout>:rank=(\d) size=6 local_rank=(\d) local_size=2 cross_rank=(\d) cross_size=3 torch_rank=\d host=(\S+) gpus=(\S+))");
  std::map<int, std::string> seen;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    CHECK(m[1] == m[2]);
    seen[std::stoi(m[2])] = m[5].str() + " gpu " + m[6].str();
  }
  const std::map<int, std::string> expected = {{0, "node01 gpu 0"}, {1, "node01 gpu 1"}, {2, "node02 gpu 0"},
                                               {3, "node02 gpu 1"}, {4, "node03 gpu 0"}, {5, "node03 gpu 1"}};
  CHECK(seen == expected);
}

TEST_CASE("a submitted job whose rank exits 3 ends FAILED with exit code 3 and the summary in its error file", "[cluster][sbatch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string id = submit(dir.path(), {"--nodes", "3", "--ntasks-per-node", "1", "--job-name", "fails", "--", kRank,
                                       "fail", "1", "3", "30"});
  waitForEnd(id);
  CHECK(jobField(id, "JobState") == "FAILED");
  CHECK(jobField(id, "ExitCode") == "3:0");
  std::string err = readFile(dir.path() + "/fails-" + id + ".err");
  INFO(err);
  CHECK(std::regex_search(err, std::regex(R"(hvdrun: error: rank 1 exited with code 3 \(host node02, at )")));
}

TEST_CASE("arguments with spaces, quotes, dollars, backticks and newlines reach every rank of a submitted job verbatim", "[cluster][sbatch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  const std::vector<std::string> nasty = {"two words", "it's", "\"dq\"", "$HOME", "${PATH}", "`id`", "$(touch pwned)",
                                          "a\nb", "", "x; rm -rf /", "*", "--job-name=evil", "\\", "tab\there"};
  std::vector<std::string> args{"--nodes", "2", "--ntasks-per-node", "1", "--job-name", "args", "--", kRank, "args"};
  args.insert(args.end(), nasty.begin(), nasty.end());
  std::string id = submit(dir.path(), args);
  waitForEnd(id);
  CHECK(jobField(id, "JobState") == "COMPLETED");
  std::string out = readFile(dir.path() + "/args-" + id + ".out");
  INFO(out);
  // test_rank prints "arg <i> <length>:<bytes>" for each argument after its mode.
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < nasty.size(); ++i) {
      std::string expected = "arg " + std::to_string(i) + " " + std::to_string(nasty[i].size()) + ":" + nasty[i];
      std::string firstLine = expected.substr(0, expected.find('\n'));
      CHECK(countOf(out, "[" + std::to_string(rank) + "]<stdout>:" + firstLine) == 1);
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/pwned"));
}

TEST_CASE("scancel --signal=USR2 reaches every rank, the ranks checkpoint at one step and the job is requeued", "[cluster][sbatch][preempt]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string id = submit(dir.path(), {"--nodes", "3", "--gpus-per-node", "1", "--requeue", "--job-name", "pre", "--",
                                       kCollectiveRank, "preempt"});
  std::string outPath = dir.path() + "/pre-" + id + ".out";
  waitFor("3 ranks to start", [&] { return countOf(readFile(outPath), "started restart=0") == 3; });
  CHECK(run({"scancel", "--signal=USR2", id}).exitCode == 0);
  waitFor("the requeue", [&] { return jobField(id, "Restarts") == "1"; });
  std::string out = readFile(outPath);
  INFO(out << readFile(dir.path() + "/pre-" + id + ".err"));
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"(checkpoint at step (\d+))")));
  CHECK(countOf(out, "checkpoint at step " + m[1].str()) == 3);  // one step, all ranks
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(countOf(out, "[" + std::to_string(rank) + "]<stdout>:notice reached rank " + std::to_string(rank)) == 1);
  }
  CHECK(std::regex_search(readFile(dir.path() + "/pre-" + id + ".err"), std::regex("hvdrun: requeueing job " + id)));
  // Slurm holds a requeued job back for two minutes; let it start now to see the second run.
  // Not within the second of the requeue: slurmd refuses credentials issued in the second
  // it revoked the old ones ("Job credential revoked").
  waitFor("the job to be pending", [&] { return jobField(id, "JobState") == "PENDING"; });
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  CHECK(run({"scontrol", "update", "JobId=" + id, "StartTime=now"}).exitCode == 0);
  waitFor("the second run", [&] { return countOf(readFile(outPath), "started restart=1") == 3; });
  run({"scancel", id});
  waitForEnd(id);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string().rfind(".hvdrun-preempt-" + id, 0) == std::string::npos);
  }
}

TEST_CASE("the notice sent to the batch shell is forwarded by hvdrun, and ranks that ignore it are stopped after the grace and requeued", "[cluster][sbatch][preempt]") {
  requireTestbed();
  hvd::test::TempDir dir, pids;
  std::string id = submit(dir.path(), {"--nodes", "3", "--ntasks-per-node", "1", "--requeue", "--preempt-grace", "1",
                                       "--job-name", "sig", "--env", "HVD_TEST_PIDDIR=" + pids.path(), "--", kRank,
                                       "signals", "120"});
  std::string outPath = dir.path() + "/sig-" + id + ".out";
  std::string errPath = dir.path() + "/sig-" + id + ".err";
  // Slurm's own notice before the time limit (--signal=B:USR2@90) is this signal. A rank
  // writes its pid file once its handlers are in (a fixed 1.5 s wait for them was too short
  // for a loaded machine's step start).
  waitFor("the ranks to start", [&] { return hvd::test::readPidFiles(pids.path()).size() == 3; });
  auto sent = std::chrono::steady_clock::now();
  CHECK(run({"scancel", "--batch", "--signal=USR2", id}).exitCode == 0);
  waitFor("the requeue", [&] { return jobField(id, "Restarts") == "1"; });
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds(15));
  std::string out = readFile(outPath);
  std::string err = readFile(errPath);
  INFO(out << err);
  for (int rank = 0; rank < 3; ++rank) CHECK(countOf(out, "[" + std::to_string(rank) + "]<stdout>:got SIGUSR2") == 1);
  CHECK(countOf(err, "hvdrun: preemption notice (SIGUSR2) passed to every rank; ranks still running 1 s later "
                     "(--preempt-grace) were stopped") == 1);
  CHECK(countOf(err, "hvdrun: requeueing job " + id) == 1);
  run({"scancel", id});
  waitForEnd(id);
}

TEST_CASE("a job suspended by scontrol suspend for longer than HVD_TIMEOUT finishes its collectives once resumed",
          "[cluster][sbatch]") {
  // Gang scheduling and `scontrol suspend` stop every process of a job with SIGSTOP and
  // continue it later: rank 0 is computing (0.6 s of its own CPU time) when the job is
  // suspended for 4 s, and rank 1, waiting for it in an allreduce, has a 2 s timeout.
  requireTestbed();
  hvd::test::TempDir dir;
  auto r = run({"sh", "-c",
                "cd " + hvd::cli::shellQuote(dir.path()) + " && HVD_TIMEOUT=2 exec " +
                    hvd::cli::shellJoin({kHvdrun, "sbatch", "--submit", "--nodes", "2", "--ntasks-per-node", "1",
                                         "--job-name", "held", "--", kCollectiveRank, "compute-first", "600"})});
  INFO(r.err);
  REQUIRE(r.exitCode == 0);
  const std::string id = r.out.substr(0, r.out.find('\n'));
  const std::string out = dir.path() + "/held-" + id + ".out";
  waitFor("both ranks to start computing", [&] { return countOf(readFile(out), "computing ") == 2; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto suspend = run({"scontrol", "suspend", id});
  INFO(suspend.out << suspend.err);
  REQUIRE(suspend.exitCode == 0);
  std::this_thread::sleep_for(std::chrono::seconds(4));
  REQUIRE(run({"scontrol", "resume", id}).exitCode == 0);
  waitForEnd(id);
  INFO(readFile(out) << readFile(dir.path() + "/held-" + id + ".err"));
  CHECK(jobField(id, "JobState") == "COMPLETED");
  CHECK(countOf(readFile(out), "]<stdout>:done ") == 2);
}
