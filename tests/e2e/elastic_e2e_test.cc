// tests/e2e/elastic_e2e_test.cc: hvdrun --min-np on this machine with real C++ ranks: a
// rank SIGKILLed mid-job leaves the others to re-form as a smaller world (shutdown, init)
// and finish, over shared memory and over TCP; what elastic jobs cannot be is refused by
// name. (python/tests/test_elastic.py runs hvd.elastic.run with PyTorch.)
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/os/cpu_topology.h"
#include "cli/plan/cpu_binding.h"
#include "tests/support/discovery_script.h"
#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::TempDir;

namespace {

const std::string kRank = HVD_COLLECTIVE_RANK_PATH;

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void checkSurvivors(const hvd::cli::CapturedRun& run) {
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: rank 2 was killed by SIGKILL; the other 3 rank(s) go on without it as the job's world 1 "
                     "(--min-np 2)"));
  CHECK(has(run.out, "[0]<stdout>:elastic done worker 0 rank 0 size 3 worlds 2"));
  CHECK(has(run.out, "[1]<stdout>:elastic done worker 1 rank 1 size 3 worlds 2"));
  CHECK(has(run.out, "[3]<stdout>:elastic done worker 3 rank 2 size 3 worlds 2"));
  CHECK_FALSE(has(run.out, "[2]<stdout>:"));
}

}  // namespace

TEST_CASE("an elastic job of C++ ranks goes on without a killed rank as a smaller world", "[e2e]") {
  checkSurvivors(runHvdrun({"-np", "4", "--min-np", "2", kRank, "elastic", "2"}));
}

TEST_CASE("an elastic job over TCP alone goes on without a killed rank as a smaller world", "[e2e]") {
  hvd::cli::RunOptions options;
  options.env = environmentWith({"HVD_SHARED_MEMORY=0"});
  checkSurvivors(runHvdrun({"-np", "4", "--min-np", "2", kRank, "elastic", "2"}, options));
}

TEST_CASE("a rank that fails before it joins leaves the others to join the next world inside their init", "[e2e]") {
  // Rank 1 exits 0.5 s in, while the others wait in the first world's join for its address:
  // that world is abandoned under them, and init() joins the next one by itself.
  auto run = runHvdrun({"-np", "4", "--min-np", "2", "sh", "-c",
                        "if [ $HVD_ELASTIC_WORKER = 1 ]; then sleep 0.5; exit 3; fi; exec \"$0\" elastic -1", kRank});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: rank 1 exited with code 3; the other 3 rank(s) go on without it as the job's world 1"));
  CHECK(has(run.out, "[0]<stdout>:elastic done worker 0 rank 0 size 3 worlds 1"));
  CHECK(has(run.out, "[2]<stdout>:elastic done worker 2 rank 1 size 3 worlds 1"));
  CHECK(has(run.out, "[3]<stdout>:elastic done worker 3 rank 2 size 3 worlds 1"));
}

TEST_CASE("elastic jobs are refused where mpirun would start the ranks", "[e2e]") {
  auto run = runHvdrun({"--mpi", "-np", "2", "--min-np", "1", kRank, "elastic", "-1"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 2);
  CHECK(has(run.err, "--min-np: elastic jobs need hvdrun to hear of each rank's end while the others run, and "
                     "mpirun (--mpi) ends the job at the first"));
}

TEST_CASE("a minimum above the job's rank count and a reset limit without a minimum are refused", "[e2e]") {
  auto above = runHvdrun({"-np", "2", "--min-np", "3", kRank, "elastic", "-1"});
  CHECK(above.exitCode == 2);
  CHECK(has(above.err, "--min-np 3 is more than the job's 2 rank(s)"));
  auto limit = runHvdrun({"-np", "2", "--reset-limit", "1", kRank, "elastic", "-1"});
  CHECK(limit.exitCode == 2);
  CHECK(has(limit.err, "--reset-limit is for elastic jobs, and this one has no --min-np"));
}

TEST_CASE("an elastic job refuses a timeline file and its ranks write no trace when asked through the environment",
          "[e2e]") {
  TempDir dir;
  auto refused = runHvdrun({"-np", "2", "--min-np", "1", "--timeline-filename", dir.path() + "/t.json", kRank,
                            "elastic", "-1"});
  CHECK(refused.exitCode == 2);
  CHECK(has(refused.err, "--timeline-filename and --min-np: each rank's trace is named by its rank"));
  // Before, the ranks' files were named by their rank in each world: after a re-forming,
  // one process's trace overwrote another's.
  hvd::cli::RunOptions options;
  options.env = environmentWith({"HOROVOD_TIMELINE=" + dir.path() + "/env.json"});
  auto run = runHvdrun({"-np", "3", "--min-np", "2", kRank, "elastic", "1"}, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "HOROVOD_TIMELINE is not recorded in elastic jobs"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/env.json"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/env.rank1.json"));
}

TEST_CASE("a job that discovers hosts refuses other launchers and a max below -np and stops on a failing script",
          "[e2e]") {
  TempDir dir;
  const std::string script = dir.path() + "/discover.sh";
  {
    std::ofstream(script) << "#!/bin/sh\necho 'node0 1'\n";
  }
  ::chmod(script.c_str(), 0755);
  auto mpi = runHvdrun({"--mpi", "-np", "2", "--host-discovery-script", script, kRank, "elastic", "-1"});
  CHECK(mpi.exitCode == 2);
  CHECK(has(mpi.err, "--host-discovery-script: hvdrun grows elastic jobs with ranks it starts itself (on this "
                     "machine, or over ssh with -H), and this job runs on mpirun (--mpi)"));
  auto below = runHvdrun({"-np", "3", "--max-np", "2", "--host-discovery-script", script, kRank, "elastic", "-1"});
  CHECK(below.exitCode == 2);
  CHECK(has(below.err, "--max-np 2 is less than the job's 3 rank(s)"));
  // The script's first answer is checked before any rank starts.
  auto bad = runHvdrun({"-np", "2", "--host-discovery-script", script, kRank, "elastic", "-1"});
  INFO(bad.out << bad.err);
  CHECK(bad.exitCode == 3);
  CHECK(has(bad.err, "the host discovery script printed 'node0 1', which is not a host name"));
  CHECK_FALSE(has(bad.out, "elastic done"));
}

TEST_CASE("a job on this machine alone that discovers other hosts runs its ranks and says it grows here only", "[e2e]") {
  TempDir dir;
  const std::string script = dir.path() + "/discover.sh";
  {
    std::ofstream(script) << "#!/bin/sh\necho localhost:2; echo node07:4\n";
  }
  ::chmod(script.c_str(), 0755);
  // The ranks take long enough for hvdrun to look at the script's answer at least once.
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", script, "sh", "-c",
                        "sleep 1.5; exec \"$0\" elastic -1", kRank});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "the host discovery script names node07, which is not this machine: a job hvdrun runs on "
                     "this machine alone grows here only (give -H to run over ssh)"));
  CHECK(has(run.out, "[1]<stdout>:elastic done worker 1 rank 1 size 2 worlds 1"));
  CHECK_FALSE(has(run.err, "started rank(s)"));
  CHECK_FALSE(has(run.err, "does not name"));  // localhost is this machine
}

TEST_CASE("a discovery script that does not name the host the ranks start on is said to leave it alone", "[e2e]") {
  TempDir dir;
  const std::string script = dir.path() + "/discover.sh";
  {
    std::ofstream(script) << "#!/bin/sh\necho node07:4\n";
  }
  ::chmod(script.c_str(), 0755);
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", script, kRank, "elastic", "-1"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: warning: the host discovery script does not name " + hvd::test::hostName() +
                     ", where rank(s) 0, 1 start: hvdrun neither adds ranks there nor stops them when the script's "
                     "answer changes (name it as the script does"));
}

TEST_CASE("a discovery script that names this machine twice is said so and its first line is taken", "[e2e]") {
  // localhost:2 and <host name>:3 were two answers for one host: the second added a rank
  // beside the two the first allowed, on every look.
  const std::string hosts = "localhost:2\n" + hvd::test::hostName() + ":3\n";
  hvd::test::DiscoveryScript discovery(hosts);
  hvd::cli::RunOptions options;
  options.env = environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=" + hosts});
  options.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", discovery.path(), kRank, "elastic-grow", "100"}, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: warning: the host discovery script names this machine twice ('localhost' and '" +
                         hvd::test::hostName() + "'): hvdrun takes the first (localhost:2)\n"));
  CHECK_FALSE(has(run.err, "more slot(s)"));
  CHECK(has(run.out, "[1]<stdout>:elastic grown worker 1 rank 1 size 2 worlds 1 "));
}

namespace {

// An elastic job of 2 ranks here whose discovery script gives this machine a third slot
// after worker 0's 5th allreduce; `devices` are this machine's GPUs (no driver needed:
// hvdrun plans from CUDA_VISIBLE_DEVICES).
hvd::cli::CapturedRun growHere(const std::string& devices, std::vector<std::string> launch) {
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  hvd::cli::RunOptions options;
  options.env = environmentWith(
      {discovery.fileVariable(), "DISCOVERY_GROWN=localhost:3\n", "CUDA_VISIBLE_DEVICES=" + devices});
  std::vector<std::string> args{"-np", "2", "--host-discovery-script", discovery.path()};
  args.insert(args.end(), launch.begin(), launch.end());
  args.insert(args.end(), {kRank, "elastic-grow", "150"});
  return runHvdrun(args, options);
}

}  // namespace

TEST_CASE("a job on this machine grows onto the slots its discovery script adds and every rank finishes together",
          "[e2e]") {
  auto run = growHere("3,5,6,7", {});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "1 more slot(s): started rank(s) 2 there; the job's world 1 has 3 rank(s)"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 3 worlds 2 launched as rank=0 size=2 local=0 "
                     "gpus=3,5 at=0\n"));
  CHECK(has(run.out, "[1]<stdout>:elastic grown worker 1 rank 1 size 3 worlds 2 launched as rank=1 size=2 local=1 "
                     "gpus=3,5 at=1\n"));
  // The added rank is launched as what it is in the world it joins, with a GPU no rank holds:
  // device 2 is its own, where hvd.local_rank() finds it.
  CHECK(has(run.out, "[2]<stdout>:elastic grown worker 2 rank 2 size 3 worlds 1 launched as rank=2 size=3 local=2 "
                     "gpus=3,5,6 at=2\n"));
}

TEST_CASE("a job with two GPUs a rank grows onto this machine's slots and the added rank gets two no rank holds",
          "[e2e]") {
  auto run = growHere("10,11,12,13,14,15", {"--gpus-per-rank", "2"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "1 more slot(s): started rank(s) 2 there; the job's world 1 has 3 rank(s)"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 3 worlds 2 launched as rank=0 size=2 local=0 "
                     "gpus=10,11 at=0\n"));
  // Before: the added rank got none of its own and saw every GPU hvdrun sees.
  CHECK(has(run.out, "[2]<stdout>:elastic grown worker 2 rank 2 size 3 worlds 1 launched as rank=2 size=3 local=2 "
                     "gpus=14,15 at=0\n"));
  CHECK_FALSE(has(run.err, "warning"));
}

TEST_CASE("a job that grows after its ranks' last commit ends when they finish and stops the ranks added for it",
          "[e2e]") {
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  const std::string& script = discovery.path();
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=localhost:3\n",
                                 "ELASTIC_ADDED_MARK=" + discovery.inDir("added")});
  const auto start = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", script, kRank, "elastic-grow", "20", "late"}, options);
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "1 more slot(s): started rank(s) 2 there; the job's world 1 has 3 rank(s)"));
  // Rank 2 waited in init() for a world whose other ranks had finished (before: 10 minutes).
  CHECK(has(run.err, " finished (exit 0) before the job's world 1 formed, so the job's training is done: stopping "
                     "rank(s) 2, which were waiting for that world"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 2 worlds 1"));
  CHECK(has(run.out, "[1]<stdout>:elastic grown worker 1 rank 1 size 2 worlds 1"));
  CHECK_FALSE(has(run.err, "init failed"));  // stopped before anything told it its world would not form
  CHECK(took < std::chrono::seconds(30));
}

TEST_CASE("a rank that finishes while another waits in the next world stops it with the added one", "[e2e]") {
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  const std::string& script = discovery.path();
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=localhost:3\n",
                                 "ELASTIC_ADDED_MARK=" + discovery.inDir("added")});
  const auto start = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", script, kRank, "elastic-grow", "20", "late-rejoin"},
                       options);
  INFO(run.out << run.err);
  // Worker 1 went to world 1 and waited there for worker 0, which finished instead: the
  // training is done, and both ranks waiting are stopped, not failed (before: an error).
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: rank 0 finished (exit 0) before the job's world 1 formed, so the job's training is "
                     "done: stopping rank(s) 1, 2, which were waiting for that world"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 2 worlds 1"));
  CHECK_FALSE(has(run.out, "elastic rejoined"));
  CHECK_FALSE(has(run.out, "elastic init failed"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("a rank that ends cleanly without joining an elastic job's first world fails the others' init at once",
          "[e2e]") {
  const auto start = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "2", "--min-np", "1", "sh", "-c",
                        "if [ \"$HVD_RANK\" = 1 ]; then exit 0; fi; exec " + kRank},
                       hvd::test::withTimeout(std::chrono::seconds(60)));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 2);  // collective_rank's for a failed init
  CHECK(has(run.err, "the elastic job ended: rank 1 ended (exit 0) without joining the job's first world"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));  // not the 10 minutes of a world's wait
}

TEST_CASE("a job on this machine shrinks when its discovery script gives fewer slots and the others go on", "[e2e]") {
  hvd::test::DiscoveryScript discovery("localhost:3\n");
  const std::string& script = discovery.path();
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  // Worker 0 takes a slot away after its 5th allreduce: hvdrun stops the newest rank there.
  options.env = environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=localhost:2\n"});
  auto run = runHvdrun({"-np", "3", "--min-np", "2", "--host-discovery-script", script, kRank, "elastic-grow", "150"},
                       options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, ": stopping rank(s) 2 there; the job's world 1 has the other 2 rank(s)"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 2 worlds 2"));
  CHECK(has(run.out, "[1]<stdout>:elastic grown worker 1 rank 1 size 2 worlds 2"));
  CHECK_FALSE(has(run.out, "[2]<stdout>:elastic grown"));
  CHECK_FALSE(has(run.err, "hvdrun: error"));  // the stopped rank is no failure
}

TEST_CASE("a job whose discovery script gives fewer slots than --min-np allows keeps its ranks and says why",
          "[e2e]") {
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  const std::string& script = discovery.path();
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=localhost:1\n"});
  // The script makes the job elastic with --min-np at -np (2).
  auto run = runHvdrun({"-np", "2", "--host-discovery-script", script, kRank, "elastic-grow", "100"}, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "hvdrun: warning: the host discovery script gives fewer slots than rank(s) 1 run on, but they "
                     "keep running: only 1 rank(s) would be left, fewer than --min-np 2\n"));
  CHECK(has(run.out, "[1]<stdout>:elastic grown worker 1 rank 1 size 2 worlds 1"));
}

TEST_CASE("the elastic timeout bounds how long a rank waits in init for its world and is refused outside elastic jobs",
          "[e2e]") {
  // Rank 1 comes 8 s late: rank 0 gives up after 2 s and fails, and rank 1 later forms the
  // job's next world alone.
  const auto start = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "2", "--min-np", "1", "--elastic-timeout", "2", "sh", "-c",
                        "if [ \"$HVD_RANK\" = 1 ]; then sleep 8; fi; exec \"$0\" elastic -1", kRank},
                       hvd::test::withTimeout(std::chrono::seconds(60)));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "[0]<stderr>:init failed: waiting for the other ranks of the job's world 0 (up to 2 s, hvdrun "
                     "--elastic-timeout;"));
  CHECK(has(run.err, "hvdrun: rank 0 exited with code 2; the other 1 rank(s) go on without it as the job's world 1"));
  CHECK(has(run.out, "[1]<stdout>:elastic done worker 1 rank 0 size 1 worlds 1"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  auto refused = runHvdrun({"-np", "2", "--elastic-timeout", "2", kRank});
  CHECK(refused.exitCode == 2);
  CHECK(has(refused.err, "--elastic-timeout is for elastic jobs, and this one has no --min-np"));
}

TEST_CASE("under --bind-to core a rank added here takes the cores of the rank that left and one with none free runs unpinned",
          "[e2e]") {
  // Two ranks, a core each (this machine's first two); worker 1 dies and, after the
  // cooldown, worker 2 takes its place. Before, added ranks ran on every CPU hvdrun had.
  auto usable = hvd::cli::usableCpuTopology();
  REQUIRE(usable.isOk());
  auto bindings = hvd::cli::cpuBindings(hvd::cli::BindTo::kCore, 2, *usable);
  if (!bindings) hvd::test::skipTest("fewer than 2 cores here: " + bindings.status().message());
  auto commas = [](std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    std::string text;
    for (int c : cpus) text += (text.empty() ? "" : ",") + std::to_string(c);
    return text;
  };
  const std::string second = commas((*bindings)[1]);
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({discovery.fileVariable(), "ELASTIC_VICTIM=1@5"});
  auto run = runHvdrun({"-np", "2", "--min-np", "1", "--bind-to", "core", "--blacklist-cooldown-range", "1", "1",
                        "--host-discovery-script", discovery.path(), kRank, "elastic-grow", "150"},
                       options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.out, "[2]<stdout>:elastic grown worker 2 rank 1 size 2"));
  CHECK(has(run.out, "[2]<stdout>:elastic cpus worker 2: " + second + "\n"));
  CHECK(has(run.out, "[0]<stdout>:elastic cpus worker 0: " + commas((*bindings)[0]) + "\n"));
  // Three slots where two cores are held: the third rank runs unpinned, said once.
  hvd::test::DiscoveryScript three("localhost:2\n");
  // Three ranks on two cores: HVD_CONTENTION_PIN=0, or the runtime may hold the thread that
  // prints on one CPU meanwhile (contention_pin.h).
  options.env = environmentWith({three.fileVariable(), "DISCOVERY_GROWN=localhost:3\n", "HVD_CONTENTION_PIN=0"});
  auto grown = runHvdrun({"-np", "2", "--min-np", "1", "--bind-to", "core", "--host-discovery-script", three.path(),
                          kRank, "elastic-grow", "150"},
                         options);
  INFO(grown.out << grown.err);
  CHECK(grown.exitCode == 0);
  CHECK(has(grown.err, "hvdrun: warning: --bind-to core: every block of cores on "));
  CHECK(has(grown.err, " is held by a running rank, so rank 2 and later ones added there run unpinned\n"));
  std::vector<int> all;
  for (const auto& cpu : *usable) all.push_back(cpu.cpu);
  CHECK(has(grown.out, "[2]<stdout>:elastic cpus worker 2: " + commas(all) + "\n"));
}

TEST_CASE("a host where a rank failed gets ranks again after the blacklist cooldown", "[e2e]") {
  hvd::test::DiscoveryScript discovery("localhost:2\n");
  auto options = hvd::test::withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({discovery.fileVariable(), "ELASTIC_VICTIM=1@5"});
  auto run = runHvdrun({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "1", "1", "--host-discovery-script",
                        discovery.path(), kRank, "elastic-grow", "150"},
                       options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(has(run.err, "so hvdrun starts no ranks there for 1 s (--blacklist-cooldown-range)"));
  // Before, the host stayed blacklisted for the rest of the job (and the flag was refused).
  CHECK(has(run.err, "1 more slot(s): started rank(s) 2 there; the job's world 2 has 2 rank(s)"));
  CHECK(has(run.out, "[0]<stdout>:elastic grown worker 0 rank 0 size 2 worlds 3"));
  CHECK(has(run.out, "[2]<stdout>:elastic grown worker 2 rank 1 size 2 worlds 1"));
  auto refused = runHvdrun({"-np", "2", "--blacklist-cooldown-range", "5", "1", kRank});
  CHECK(refused.exitCode == 2);
  CHECK(has(refused.err, "--blacklist-cooldown-range"));
}
