// tests/e2e/engine_e2e_test.cc: the async engine in real processes under hvdrun: threads
// submitting named tensors in per-rank orders, a mismatch reported on every rank, the
// stall inspector's warning and shutdown (exit code 119), and hvdrun's engine options.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;

namespace {

const std::string kEngineRank = HVD_ENGINE_RANK_PATH;

hvd::cli::RunOptions options(std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES"});
  hvd::cli::RunOptions o;
  o.env = environmentWith(extra);
  o.timeout = std::chrono::seconds(120);
  return o;
}

int countLines(const std::string& text, const std::string& needle) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("4 threads on each of 4 ranks submit 50 named tensors each in different orders, and all are right", "[e2e][mp][engine]") {
  for (const char* fusion : {"128", "0"}) {
    auto run = runHvdrun({"-np", "4", "--fusion-threshold-mb", fusion, kEngineRank, "async", "4"}, options());
    INFO("fusion " << fusion << "\n" << run.out << run.err);
    REQUIRE(run.exitCode == 0);
    CHECK(countLines(run.out, "<stdout>:async ok 200") == 4);
  }
}

TEST_CASE("a tensor submitted with another count on one rank fails on every rank with the same explanation", "[e2e][mp][engine]") {
  auto run = runHvdrun({"-np", "3", kEngineRank, "mismatch"}, options());
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  const std::string message =
      "error: tensor 'w' was submitted differently by different ranks: ranks 0, 2 asked for allreduce of 8 float32 "
      "(sum) but rank 1 asked for allreduce of 7 float32 (sum)";
  for (int r = 0; r < 3; ++r) CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:" + message) != std::string::npos);
}

TEST_CASE("a rank late to a collective draws rank 0's stall warning naming it and the tensor, and the job still ends well", "[e2e][mp][engine]") {
  auto run = runHvdrun({"-np", "3", "--stall-check-warning-time-seconds", "1", kEngineRank, "stall", "3"}, options());
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(countLines(run.out, "<stdout>:late ok 3") == 3);
  CHECK(std::regex_search(run.err, std::regex(R"(\[0\]<stderr>:hvd: warning: rank 0 \([^)]*\): some ranks have waited more than 1 s)")));
  CHECK(std::regex_search(run.err, std::regex(R"(\[0\]<stderr>:.*'late': waiting [0-9]+ s on ranks 0, 1; never submitted by rank 2)")));
  CHECK(countLines(run.err, "'late': waiting") == 1);  // once per tensor, not every check
  CHECK(run.err.find("[1]<stderr>:hvd: warning") == std::string::npos);
}

TEST_CASE("with a stall shutdown time, a collective one rank never submits ends the job with exit code 119, explained", "[e2e][mp][engine]") {
  auto started = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "3", "--stall-check-warning-time-seconds", "1", "--stall-check-shutdown-time-seconds", "2",
                        kEngineRank, "stall", "60"},
                       options());
  auto took = std::chrono::steady_clock::now() - started;
  INFO(run.out << run.err);
  CHECK(run.exitCode == 119);
  CHECK(took < std::chrono::seconds(20));
  CHECK(std::regex_search(run.err, std::regex(R"(hvd: error: rank [0-2] \([^)]*\): collective 'late' stalled: ranks 0, 1 waited [0-9]+ s for rank 2, which never submitted it \(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=2\); ending this rank with exit code 119)")));
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [0-2] exited with code 119 .*\n(.*\n)*.*a collective stalled)")));
}

TEST_CASE("hvdrun's engine options reach every rank as Horovod's variables", "[e2e][engine]") {
  auto run = runHvdrun({"-np", "2", "--fusion-threshold-mb", "1", "--cycle-time-ms", "0.5", "--cache-capacity", "0",
                        "--no-stall-check", "--stall-check-warning-time-seconds", "9", "--stall-check-shutdown-time-seconds",
                        "30", "--log-level", "error", kEngineRank, "env"},
                       options());
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (const char* line : {"HOROVOD_FUSION_THRESHOLD=1048576", "HOROVOD_CYCLE_TIME=0.5", "HOROVOD_CACHE_CAPACITY=0",
                           "HOROVOD_STALL_CHECK_DISABLE=1", "HOROVOD_STALL_CHECK_TIME_SECONDS=9",
                           "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=30", "HOROVOD_LOG_LEVEL=error"}) {
    CHECK(countLines(run.out, std::string("<stdout>:") + line) == 2);
  }
  auto plan = runHvdrun({"--dry-run", "--format", "sh", "--rank", "0", "-np", "1", "--fusion-threshold-mb", "2", kEngineRank}, options());
  CHECK(plan.out.find("HOROVOD_FUSION_THRESHOLD=2097152") != std::string::npos);
  // From a config file and from HVDRUN_* variables too (docs/config.md).
  hvd::test::TempDir dir;
  std::string config = dir.path() + "/hvdrun.toml";
  {
    std::ofstream out(config);
    out << "fusion-threshold-mb = 64\nno-stall-check = true\n";
  }
  auto fromConfig = runHvdrun({"--config-file", config, "--dry-run", "--format", "sh", "--rank", "0", "-np", "1", kEngineRank},
                              options({"HVDRUN_CYCLE_TIME_MS=2"}));
  INFO(fromConfig.out << fromConfig.err);
  CHECK(fromConfig.out.find("export HOROVOD_FUSION_THRESHOLD=67108864\n") != std::string::npos);
  CHECK(fromConfig.out.find("export HOROVOD_STALL_CHECK_DISABLE=1\n") != std::string::npos);
  CHECK(fromConfig.out.find("export HOROVOD_CYCLE_TIME=2\n") != std::string::npos);
}

TEST_CASE("malformed engine options are refused before anything starts, naming the option and value", "[e2e][engine]") {
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Bad> cases{
      {{"--cycle-time-ms", "0"}, "hvdrun: error: --cycle-time-ms expects milliseconds above 0, at most 10000, got '0'"},
      {{"--fusion-threshold-mb", "-1"}, "hvdrun: error: --fusion-threshold-mb expects a whole number from 0 to 1048576, got '-1'"},
      {{"--log-level", "loud"}, "hvdrun: error: --log-level expects trace, debug, info, warning, error or fatal, got 'loud'"},
      {{"--stall-check-warning-time-seconds", "0"},
       "hvdrun: error: --stall-check-warning-time-seconds expects a whole number from 1 to 604800, got '0'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"-np", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.push_back(kEngineRank);
    auto run = runHvdrun(args, options());
    INFO(run.err);
    CHECK(run.exitCode == 2);
    CHECK(run.err.find(c.message + "\n") == 0);
  }
}

TEST_CASE("a malformed HOROVOD_CYCLE_TIME given to a rank fails its init naming the variable", "[e2e][engine]") {
  auto run = runHvdrun({"-np", "1", kEngineRank, "stall", "0"}, options({"HOROVOD_CYCLE_TIME=fast"}));
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(run.err.find("init failed: HOROVOD_CYCLE_TIME='fast': expected milliseconds above 0, at most 10000") != std::string::npos);
}

TEST_CASE("the conformance checks pass on every CPU backend: the ring over shared memory, over TCP alone, and Open MPI", "[e2e][mp][engine]") {
  struct Backend {
    std::string name;
    std::vector<std::string> launch, env;
  };
  std::vector<Backend> backends{{"tcp+shm", {}, {"HVD_SHARED_MEMORY=1"}}, {"tcp", {}, {"HVD_SHARED_MEMORY=0"}}};
#ifdef HVD_MPI_CROSSCHECK_PATH
  backends.push_back({"mpi", {"--mpi"}, {"HOROVOD_CPU_OPERATIONS=mpi", "OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp"}});
#else
  WARN("built without MPI: the mpi backend is not checked");
#endif
  for (const auto& b : backends) {
    for (const std::vector<std::string>& program : {std::vector<std::string>{HVD_COLLECTIVE_RANK_PATH, "check"},
                                                    std::vector<std::string>{kEngineRank, "async", "2"}}) {
      std::vector<std::string> args = b.launch;
      args.insert(args.end(), {"-np", "3"});
      args.insert(args.end(), program.begin(), program.end());
      auto run = runHvdrun(args, options(b.env));
      INFO(b.name << ": " << program[0] << "\n" << run.out << run.err);
      CHECK(run.exitCode == 0);
      CHECK(countLines(run.out, program[1] == "check" ? "<stdout>:ok " : "<stdout>:async ok 100") == 3);
    }
  }
}
