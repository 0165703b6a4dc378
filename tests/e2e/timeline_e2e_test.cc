// tests/e2e/timeline_e2e_test.cc: --timeline-filename on real ranks: a known run with one
// rank late (phases, a tick per rank, args, tracks, merge), and traces that stay valid
// JSON when a rank throws, or a rank or hvdrun itself is SIGKILLed; HOROVOD_TIMELINE alone
// under plain mpirun.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>

#include "runtime/timeline/trace_files.h"
#include "tests/support/hvdrun_runner.h"
#include "runtime/common/json.h"

using hvd::test::environmentWith;
using hvd::Json;
using hvd::test::runHvdrun;

namespace {

// The file's JSON document; `error` empty when it parsed, else why not.
hvd::Json readTrace(const std::string& path, std::string& error) {
  auto json = hvd::readJsonFile(path);
  error = json ? "" : json.status().message();
  return json ? *json : hvd::Json{};
}

hvd::cli::RunOptions options() {
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES"});
  o.timeout = std::chrono::seconds(60);
  return o;
}

// Events of rank `pid` on the track named `track`, by name.
std::multimap<std::string, const Json*> eventsOn(const Json& trace, int pid, const std::string& track) {
  double tid = -1;
  for (const auto& e : trace.array()) {
    if (e["name"].str() == "thread_name" && e["pid"].number() == pid && e["args"]["name"].str() == track) tid = e["tid"].number();
  }
  std::multimap<std::string, const Json*> out;
  for (const auto& e : trace.array()) {
    if (e.has("tid") && e["pid"].number() == pid && e["tid"].number() == tid && e["ph"].str() != "M") out.emplace(e["name"].str(), &e);
  }
  return out;
}

}  // namespace

TEST_CASE("a run with one late rank records every phase in order, a tick per rank, and one track per rank", "[e2e][mp][timeline]") {
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/trace.json";
  auto run = runHvdrun({"-np", "3", "--timeline-filename", path, HVD_ENGINE_RANK_PATH, "stall", "1"}, options());
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(hvd::timeline::existingRankTraces(path, 3) == std::vector<std::string>{path});  // merged, per-rank files gone
  std::string error;
  hvd::Json trace = readTrace(path, error);
  INFO(error);
  REQUIRE(error.empty());
  int processes = 0;
  for (const auto& e : trace.array()) processes += e["name"].str() == "process_name";
  CHECK(processes == 3);
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    auto ev = eventsOn(trace, rank, "late");
    REQUIRE(ev.count("NEGOTIATE_ALLREDUCE") == 1);
    REQUIRE(ev.count("ALLREDUCE") == 1);
    const Json& negotiate = *ev.find("NEGOTIATE_ALLREDUCE")->second;
    const Json& op = *ev.find("ALLREDUCE")->second;
    CHECK(negotiate["ph"].str() == "X");
    CHECK(op["args"]["dtype"].str() == "float64");
    CHECK(op["args"]["count"].number() == 1);
    double negotiateEnd = negotiate["ts"].number() + negotiate["dur"].number();
    CHECK(op["ts"].number() >= negotiateEnd - 1);  // the op comes after its negotiation
    REQUIRE(ev.count("RING_ALLREDUCE") == 1);
    // Ticks: one per rank; rank 2's a second after the others' (it slept), on every rank's trace.
    REQUIRE(ev.count("0") == 1);
    REQUIRE(ev.count("1") == 1);
    REQUIRE(ev.count("2") == 1);
    double late = (*ev.find("2")->second)["ts"].number() - (*ev.find("0")->second)["ts"].number();
    CHECK(late > 800000);   // microseconds
    CHECK(late < 5000000);
    // The late rank negotiated briefly; the others waited the second out.
    if (rank == 2) CHECK(negotiate["dur"].number() < 500000);
    else CHECK(negotiate["dur"].number() > 800000);
  }
  // The terminal's view of the same trace names the late rank.
  auto summary = runHvdrun({"timeline", "summary", path}, options());
  INFO(summary.out << summary.err);
  CHECK(summary.exitCode == 0);
  CHECK(std::regex_search(summary.out, std::regex(R"(\nlate +3 +8 +[0-9.]+ / [0-9.]+ +[0-9.]+ / [0-9.]+ +rank 2 \(1 of 1\)\n)")));
  auto missing = runHvdrun({"timeline", "summary", dir.path() + "/none.json"}, options());
  CHECK(missing.exitCode == 2);
  CHECK(missing.err.find("hvdrun: error: timeline summary: '" + dir.path() + "/none.json' does not exist") == 0);
}

// How many events of each name the trace holds on rank `pid`, on any track.
std::map<std::string, int> namesOn(const Json& trace, int pid) {
  std::map<std::string, int> out;
  for (const auto& e : trace.array()) {
    if (e.has("tid") && e["pid"].number() == pid && e["ph"].str() != "M") ++out[e["name"].str()];
  }
  return out;
}

TEST_CASE("a reducescatter an alltoall and an Adasum show as what moved them: hvd's ring or Open MPI's call",
          "[e2e][mp][timeline]") {
  hvd::test::TempDir dir;
  std::vector<std::pair<std::vector<std::string>, std::string>> runs{{{"-np", "3"}, "RING_"}};
#ifdef HVD_MPI_CROSSCHECK_PATH
  runs.push_back({{"--mpi", "-np", "3"}, "MPI_"});
#endif
  for (const auto& [launch, prefix] : runs) {
    std::string path = dir.path() + "/" + prefix + "trace.json";
    std::vector<std::string> args = launch;
    args.insert(args.end(), {"--timeline-filename", path, HVD_C_API_RANK_PATH});
    auto o = options();
    if (prefix == "MPI_") {
      o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES",
                               "HOROVOD_CPU_OPERATIONS=mpi", "OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp"});
    }
    auto run = runHvdrun(args, o);
    INFO(prefix << "\n" << run.out << run.err);
    REQUIRE(run.exitCode == 0);
    std::string error;
    hvd::Json trace = readTrace(path, error);
    INFO(error);
    REQUIRE(error.empty());
    for (int rank = 0; rank < 3; ++rank) {
      INFO("rank " << rank);
      auto names = namesOn(trace, rank);
      CHECK(names[prefix == "MPI_" ? "MPI_REDUCE_SCATTER" : "RING_REDUCESCATTER"] == 1);
      CHECK(names[prefix == "MPI_" ? "MPI_ALLTOALLV" : "RING_ALLTOALL"] == 2);
      CHECK(names["REDUCESCATTER"] == 1);
      CHECK(names["ALLTOALL"] == 2);
      CHECK(names[prefix == "MPI_" ? "MPI_ADASUM_ALLREDUCE" : "ADASUM_ALLREDUCE"] == 1);  // c_api_rank's one
    }
  }
}

TEST_CASE("a process set's collectives show in its members' traces on tracks of their own naming job ranks",
          "[e2e][mp][timeline]") {
  // collective_rank's sets: 1 = {0, 1}, 2 = {2, 3}, 3 = {1, 2, 3}. Before, a set's engine
  // recorded nothing: only the job's own collectives were in the trace.
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/trace.json";
  auto run = runHvdrun({"-np", "4", "--timeline-filename", path, HVD_COLLECTIVE_RANK_PATH, "process-sets"}, options());
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::string error;
  hvd::Json trace = readTrace(path, error);
  INFO(error);
  REQUIRE(error.empty());
  const std::map<int, std::vector<int>> setsOf{{0, {1}}, {1, {1, 3}}, {2, {2, 3}}, {3, {2, 3}}};
  const std::map<int, std::vector<std::string>> membersOf{{1, {"0", "1"}}, {2, {"2", "3"}}, {3, {"1", "2", "3"}}};
  for (const auto& [rank, sets] : setsOf) {
    INFO("rank " << rank);
    for (int set = 1; set <= 3; ++set) {
      INFO("process set " << set);
      const std::string track = "process set " + std::to_string(set) + ": sum";
      auto ev = eventsOn(trace, rank, track);
      const bool member = std::find(sets.begin(), sets.end(), set) != sets.end();
      CHECK((ev.count("ALLREDUCE") > 0) == member);
      if (!member) continue;
      CHECK(ev.count("RING_ALLREDUCE") > 0);
      // Each arrival mark names a job rank of the set; every member's shows.
      for (const std::string& who : membersOf.at(set)) CHECK(ev.count(who) > 0);
      for (const auto& [name, e] : ev) {
        if ((*e)["ph"].str() != "i") continue;
        const auto& members = membersOf.at(set);
        CHECK(std::find(members.begin(), members.end(), name) != members.end());
      }
    }
  }
}

TEST_CASE("the trace stays valid JSON when a rank is SIGKILLed mid-run, and when hvdrun is", "[e2e][mp][timeline]") {
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/trace.json";
  auto run = runHvdrun({"-np", "3", "--timeline-filename", path, HVD_COLLECTIVE_RANK_PATH, "loop", "1"}, options());
  CHECK(run.exitCode == 137);
  std::string error;
  hvd::Json trace = readTrace(path, error);
  INFO(error);
  CHECK(error.empty());
  CHECK(trace.isArray());

  // hvdrun SIGKILLed while the ranks run: no merge, but every rank's own file parses.
  std::string killed = dir.path() + "/killed.json";
  auto env = *options().env;
  int pid = hvd::test::spawnHvdrun({"-np", "3", "--timeline-filename", killed, HVD_ENGINE_RANK_PATH, "stall", "30"}, env);
  // Killed once every rank has its trace open (fixed waits of 1.5 s, then 0.5 s for the
  // ranks to end, assumed an idle machine).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (hvd::timeline::existingRankTraces(killed, 3).size() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // and has written to it
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // The ranks notice and go, each closing its trace: until each parses, or 30 s.
  std::vector<std::string> files;
  std::map<std::string, std::string> errors;
  until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    files = hvd::timeline::existingRankTraces(killed, 3);
    errors.clear();
    for (const auto& f : files) {
      hvd::Json t = readTrace(f, error);
      if (!error.empty() || !t.isArray()) errors[f] = error.empty() ? "not an array" : error;
    }
  } while ((files.size() < 3 || !errors.empty()) && std::chrono::steady_clock::now() < until);
  CHECK(files.size() == 3);
  for (const auto& [f, why] : errors) {
    INFO(f << ": " << why);
    CHECK(why.empty());
  }
  // What hvdrun could not merge, the user can.
  std::vector<std::string> merge{"timeline", "merge", "-o", dir.path() + "/merged.json"};
  merge.insert(merge.end(), files.begin(), files.end());
  auto merged = runHvdrun(merge, options());
  INFO(merged.err);
  CHECK(merged.exitCode == 0);
  hvd::Json m = readTrace(dir.path() + "/merged.json", error);
  REQUIRE(error.empty());
  int processes = 0;
  for (const auto& e : m.array()) processes += e["name"].str() == "process_name";
  CHECK(processes == 3);
}

TEST_CASE("the merged trace stays valid JSON when a rank dies of an exception nobody caught", "[e2e][mp][timeline]") {
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/trace.json";
  auto run = runHvdrun({"-np", "3", "--timeline-filename", path, HVD_ENGINE_RANK_PATH, "throw"}, options());
  INFO(run.out << run.err);
  CHECK(run.exitCode == 134);  // SIGABRT from std::terminate
  CHECK(run.err.find("a training step failed") != std::string::npos);
  std::string error;
  hvd::Json trace = readTrace(path, error);
  INFO(error);
  REQUIRE(error.empty());
  // What every rank recorded before the failure is there: the dead rank's writer and the
  // others' (stopped by hvdrun's SIGTERM) had written it while the last rank computed.
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    CHECK(eventsOn(trace, rank, "step.9").count("ALLREDUCE") == 1);
  }
  int processes = 0;
  for (const auto& e : trace.array()) processes += e["name"].str() == "process_name";
  CHECK(processes == 3);
}

TEST_CASE("started by plain mpirun HOROVOD_TIMELINE alone makes every rank write its own trace", "[e2e][mp][mpi][timeline]") {
  if (!hvd::test::haveMpirun()) hvd::test::skipTest("mpirun is not installed");
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/trace.json";
  hvd::cli::RunOptions o = options();
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES", "OMPI_ALLOW_RUN_AS_ROOT=1",
                           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp",
                           "HVD_RENDEZVOUS_ADDR", "HVD_RANK", "HVD_SIZE", "HOROVOD_TIMELINE=" + path});
  auto run = hvd::cli::runAndCapture({"mpirun", "--oversubscribe", "-np", "3", HVD_ENGINE_RANK_PATH, "stall", "0"}, o);
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  REQUIRE(run->exitCode == 0);
  auto files = hvd::timeline::existingRankTraces(path, 8);
  REQUIRE(files.size() == 3);  // trace.json, trace.rank1.json, trace.rank2.json: nobody merges them
  for (int rank = 0; rank < 3; ++rank) {
    INFO(files[static_cast<size_t>(rank)]);
    std::string error;
    hvd::Json trace = readTrace(files[static_cast<size_t>(rank)], error);
    REQUIRE(error.empty());
    auto ev = eventsOn(trace, rank, "late");
    CHECK(ev.count("NEGOTIATE_ALLREDUCE") == 1);
    CHECK(ev.count("ALLREDUCE") == 1);
    CHECK(ev.count("0") + ev.count("1") + ev.count("2") == 3);
  }
}

TEST_CASE("a --timeline-filename that is not a regular file or sits in no writable directory is refused before any rank starts",
          "[e2e][timeline]") {
  hvd::test::TempDir dir;
  std::string fifo = dir.path() + "/sink";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string marker = dir.path() + "/started";
  for (const std::string& path : {fifo, dir.path(), dir.path() + "/missing/t.json"}) {
    INFO(path);
    auto run = runHvdrun({"-np", "2", "--timeline-filename", path, "touch", marker}, options());
    CHECK(run.exitCode == 2);
    CHECK(run.err.find("--timeline-filename " + path + ":") != std::string::npos);
    CHECK(run.err.find("hint:") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(marker));
  }
  CHECK(std::filesystem::is_fifo(fifo));
}

TEST_CASE("HOROVOD_TIMELINE=/dev/null is every rank's sink and no file appears beside it", "[e2e][timeline]") {
  hvd::cli::RunOptions o = options();
  o.env->push_back("HOROVOD_TIMELINE=/dev/null");
  auto run = runHvdrun({"-np", "2", HVD_COLLECTIVE_RANK_PATH}, o);
  // Rank 1 wrote /dev/null.rank1: a stray file in /dev as root, an init failure otherwise.
  bool stray = std::filesystem::exists("/dev/null.rank1");
  if (stray) std::filesystem::remove("/dev/null.rank1");
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK_FALSE(stray);
}

TEST_CASE("timeline summary and merge refuse a pipe a device and a directory at once naming the path", "[e2e][timeline]") {
  hvd::test::TempDir dir;
  std::string fifo = dir.path() + "/trace.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  hvd::cli::RunOptions o = options();
  o.timeout = std::chrono::seconds(10);  // a read of the pipe or of /dev/zero never ends
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fifo, "is a pipe"}, {"/dev/zero", "is a device"}, {dir.path(), "is a directory"}};
  for (const auto& [path, kind] : cases) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"timeline", "summary", path},
          std::vector<std::string>{"timeline", "merge", "-o", dir.path() + "/merged.json", path}}) {
      INFO(args[1] << " " << path);
      auto run = runHvdrun(args, o);
      INFO(run.err);
      CHECK(run.exitCode == 2);
      CHECK(run.err.find("'" + path + "' " + kind) != std::string::npos);
      CHECK(run.err.find("hint:") != std::string::npos);
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/merged.json"));
}
