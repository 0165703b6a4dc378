// tests/slurm/cluster_launch_test.cc: `hvdrun -np N prog` inside real allocations of the
// test cluster, through srun: every rank runs where the plan says with the planned
// identity and GPU; a failing rank ends the job with its code and a summary; nothing
// survives.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <cstdio>
#include <sstream>
#include <thread>

#include "tests/support/hvdrun_runner.h"
#include "tests/support/memory_cgroup.h"

namespace {

const std::string kHvdrun = HVD_HVDRUN_PATH;
const std::string kRank = HVD_TEST_RANK_PATH;

void requireTestbed() {
  if (std::getenv("HVD_TESTBED_DIR") == nullptr) hvd::test::skipTest("not running under tests/slurm/testbed.sh");
}

hvd::cli::CapturedRun inAllocation(const std::vector<std::string>& sallocArgs, const std::vector<std::string>& command,
                                   const std::vector<std::string>& extraEnv = {},
                                   std::chrono::seconds timeout = std::chrono::seconds(60)) {
  std::vector<std::string> argv{"salloc"};
  argv.insert(argv.end(), sallocArgs.begin(), sallocArgs.end());
  argv.insert(argv.end(), command.begin(), command.end());
  hvd::cli::RunOptions options;
  options.timeout = timeout;
  options.env = hvd::test::environmentWith(extraEnv);
  auto run = hvd::cli::runAndCapture(argv, options);
  REQUIRE(run.isOk());
  return *run;
}


// A job hvdrun runs in the background inside `salloc -N3 -n4`: `shell` starts hvdrun, writes
// its pid to pidFile; returns once the 4 ranks have written their pid files into pids.
struct BackgroundJob {
  pid_t salloc = -1;
  int hvdrun = 0;
  std::vector<int> ranks;
};

BackgroundJob startInAllocation(const std::string& shell, const std::string& pids, const std::string& pidFile) {
  BackgroundJob job;
  job.salloc = ::fork();
  REQUIRE(job.salloc >= 0);
  if (job.salloc == 0) {
    ::setenv("HVD_TEST_PIDDIR", pids.c_str(), 1);
    ::execlp("salloc", "salloc", "-N3", "-n4", "sh", "-c", shell.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (hvd::test::readPidFiles(pids).size() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  job.ranks = hvd::test::readPidFiles(pids);
  REQUIRE(job.ranks.size() == 4);
  std::ifstream(pidFile) >> job.hvdrun;
  REQUIRE(job.hvdrun > 0);
  return job;
}

}  // namespace

TEST_CASE("through srun each rank runs on its planned node with its planned identity and GPU", "[cluster][launch]") {
  requireTestbed();
  auto run = inAllocation({"-N3", "-n5", "--gpus-per-task=1"}, {kHvdrun, kRank, "identity"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::regex line(R"(\[(\d)\]<stdout>:rank=(\d) size=5 local_rank=(\d) local_size=(\d) cross_rank=(\d) cross_size=3 torch_rank=(\d) host=(\S+) gpus=(\S+))");
  // 2, 2, 1 ranks on node01..03; local rank r holds device r (what Slurm bound).
  const std::map<int, std::vector<std::string>> expected = {
      {0, {"0", "2", "0", "node01", "0"}}, {1, {"1", "2", "0", "node01", "1"}}, {2, {"0", "2", "1", "node02", "0"}},
      {3, {"1", "2", "1", "node02", "1"}}, {4, {"0", "1", "2", "node03", "0"}}};
  std::map<int, std::vector<std::string>> seen;
  std::istringstream in(run.out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    CHECK(m[1] == m[2]);
    CHECK(m[2] == m[6]);
    seen[std::stoi(m[2])] = {m[3], m[4], m[5], m[7], m[8]};
  }
  CHECK(seen == expected);
}

TEST_CASE("through srun torchrun's --nproc-per-node puts that many ranks on every node of the allocation",
          "[cluster][launch]") {
  requireTestbed();
  // 6 tasks on 3 nodes (2 each); one rank a node.
  auto run = inAllocation({"-N3", "-n6"}, {kHvdrun, "--nnodes", "3", "--nproc-per-node", "1", kRank, "identity"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:rank=" + std::to_string(rank) +
                       " size=3 local_rank=0 local_size=1 cross_rank=" + std::to_string(rank) + " cross_size=3 ") !=
          std::string::npos);
  }
  CHECK(run.out.find("[3]<stdout>") == std::string::npos);
}

TEST_CASE("through srun nproc-per-node cpu puts a rank on every CPU the job has on each node", "[cluster][launch]") {
  requireTestbed();
  // 4 tasks of a CPU on each of 2 nodes: 4 CPUs a node, and as many ranks. Before, "hvdrun
  // counts the CPUs of this machine only, not of host node01".
  auto run = inAllocation({"-N2", "--ntasks-per-node=4", "-c", "1"}, {kHvdrun, "--nproc-per-node", "cpu", kRank,
                                                                        "identity"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 8; ++rank) {
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:rank=" + std::to_string(rank) + " size=8 local_rank=" +
                       std::to_string(rank % 4) + " local_size=4 ") != std::string::npos);
  }
}

TEST_CASE("a PyTorch program trains with the hvd package across three nodes through srun", "[cluster][launch][python]") {
  requireTestbed();
  const std::string python = std::string(HVD_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(python.c_str(), X_OK) != 0) hvd::test::skipTest("no .venv (scripts/setup.sh makes it)");
  auto run = inAllocation({"-N3", "-n3"},
                          {kHvdrun, python, std::string(HVD_SOURCE_DIR) + "/examples/python/torch_digits.py", "--epochs", "2"},
                          {}, std::chrono::seconds(180));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::smatch m;
  REQUIRE(std::regex_search(run.out, m, std::regex(R"(\[0\]<stdout>:epoch 2: train loss ([0-9.]+), test loss [0-9.]+, test accuracy ([0-9.]+))")));
  CHECK(std::stod(m[2]) > 0.5);
}

TEST_CASE("hvdrun's TF_CONFIG equals the cluster spec TensorFlow's SlurmClusterResolver computes for the same step", "[cluster][launch][python]") {
  requireTestbed();
  const std::string python = std::string(HVD_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(python.c_str(), X_OK) != 0) hvd::test::skipTest("no .venv (scripts/setup.sh makes it)");
  // 5 tasks on 3 nodes, so some node has several (ports per node count) and the split is uneven.
  auto run = inAllocation({"-N3", "-n5"},
                          {kHvdrun, "--tf-config", python, std::string(HVD_SOURCE_DIR) + "/tests/slurm/tf_slurm_resolver.py"},
                          {}, std::chrono::seconds(180));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::regex agree(R"(\[(\d)\]<stdout>:rank (\d): agree worker (\d) (\S+))");
  std::set<int> ranks;
  std::set<std::string> workers;
  for (auto it = std::sregex_iterator(run.out.begin(), run.out.end(), agree); it != std::sregex_iterator(); ++it) {
    CHECK((*it)[1] == (*it)[2]);
    CHECK((*it)[2] == (*it)[3]);
    ranks.insert(std::stoi((*it)[2]));
    workers.insert((*it)[4]);
  }
  CHECK(ranks == std::set<int>{0, 1, 2, 3, 4});
  REQUIRE(workers.size() == 1);  // every rank saw the same cluster
  // Five workers, node by node in Slurm's order (how many on each is Slurm's choice).
  CHECK(std::regex_match(*workers.begin(),
                         std::regex(R"(node01:\d+(,node01:\d+)*,node02:\d+(,node02:\d+)*,node03:\d+(,node03:\d+)*)")));
  CHECK(std::count(workers.begin()->begin(), workers.begin()->end(), ',') == 4);
}

TEST_CASE("through srun a rank exiting 3 ends the job with code 3 and a summary naming it", "[cluster][launch]") {
  requireTestbed();
  auto start = std::chrono::steady_clock::now();
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, kRank, "fail", "2", "3", "30"});
  INFO(run.err);
  CHECK(run.exitCode == 3);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  std::regex summary(R"(hvdrun: error: rank 2 exited with code 3 \(host node02, at [0-9T:+\-]+\)\n)"
                     R"(  last lines of rank 2's stderr:\n    \| first complaint\n    \| second complaint\n)"
                     R"(    \| final words of rank 2\n  hvdrun stopped 3 other rank\(s\) of 4; exit code 3\n)");
  std::smatch m;
  CHECK(std::regex_search(run.err, m, summary));
  // Slurm's line about the cancelled step is Slurm's, never a rank's stderr.
  CHECK(!std::regex_search(run.err, std::regex(R"(\[\d+\]<stderr>:slurmstepd)")));
}

TEST_CASE("through srun --max-restarts starts a new step of every rank on every node after a rank fails",
          "[cluster][launch]") {
  requireTestbed();
  // Rank 2 (on node02) fails in the first start; the second start's ranks are told they are
  // in restart 1 by hvdrun (each node's shim rebuilds the plan, which knows no restarts).
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, "--max-restarts", "2", kRank, "fail-starts", "2", "1", "0.3"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  for (int r = 0; r < 4; ++r) {
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:start 0 of 2 restarts") != std::string::npos);
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:start 1 of 2 restarts") != std::string::npos);
  }
  CHECK(run.err.find("hvdrun: error: rank 2 exited with code 3 (host node02") != std::string::npos);
  CHECK(run.err.find("hvdrun: starting every rank again: restart 1 of 2 (--max-restarts)") != std::string::npos);
}

TEST_CASE("through srun a rank that returned early with exit 0 is named in the report of the peer that failed for want "
          "of it",
          "[cluster][launch]") {
  requireTestbed();
  // Rank 0 shuts hvd down and exits 0; its peers on the other nodes fail. Each task's shim
  // tells hvdrun of a clean end, as it did in elastic jobs alone.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  auto run = inAllocation({"-N3", "-n3"}, {kHvdrun, kCollective, "leave-early", "0"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [12] exited with code 1)")));
  CHECK(std::regex_search(run.err, std::regex(R"(\n  rank 0 had ended with exit code 0 while rank [12] still ran )"
                                              R"(collectives: every rank must make the same collective calls)")));
}

TEST_CASE("through srun an elastic job goes on without a killed rank and the step keeps its other tasks",
          "[cluster][launch]") {
  requireTestbed();
  // Rank 2 (node02) SIGKILLs itself mid-job: srun keeps the step (--kill-on-bad-exit=0),
  // node02's shim reports the end, and the others re-form as a world of 4.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  auto run = inAllocation({"-N3", "-n5"}, {kHvdrun, "--min-np", "3", kCollective, "elastic", "2"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: rank 2 was killed by SIGKILL; the other 4 rank(s) go on without it as the job's "
                     "world 1 (--min-np 3)") != std::string::npos);
  CHECK(run.err.find("hvdrun: the elastic job went on without rank(s) 2 after they failed") != std::string::npos);
  const std::vector<std::pair<int, int>> workerRank{{0, 0}, {1, 1}, {3, 2}, {4, 3}};
  for (auto [worker, rank] : workerRank) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic done worker " + std::to_string(worker) +
                       " rank " + std::to_string(rank) + " size 4 worlds 2") != std::string::npos);
  }
}

TEST_CASE("through srun an elastic job that falls below its minimum ends with the rank that took it there",
          "[cluster][launch]") {
  requireTestbed();
  // The survivors learn there is no next world at once, instead of waiting HVD_TIMEOUT for one.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  auto started = std::chrono::steady_clock::now();
  auto run = inAllocation({"-N3", "-n3"}, {kHvdrun, "--min-np", "3", kCollective, "elastic", "1"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(run.out << run.err);
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: rank 1 was killed by SIGKILL, and the elastic job cannot go on without it: only 2 "
                     "rank(s) would be left, fewer than --min-np 3") != std::string::npos);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL (host node02") != std::string::npos);
  CHECK(run.out.find("elastic init failed: hvdrun ended the elastic job: only 2 rank(s) would be left") !=
        std::string::npos);
  CHECK(took < 20);
}

TEST_CASE("through srun the ranks' traffic between nodes goes over the network, never through shared memory",
          "[cluster][launch]") {
  requireTestbed();
  // The bed's nodes share one kernel: ranks on different nodes could map each other's ring
  // buffers, and the plan's hosts must keep them from it. Two ranks a node.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  auto run = inAllocation({"-N3", "-n6"}, {kHvdrun, kCollective, "traffic"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  const auto traffic = hvd::test::networkTrafficByRank(run.out);
  CHECK(static_cast<int>(traffic.size()) == 6);
  for (auto [rank, bytes] : traffic) {
    INFO("rank " << rank);
    CHECK(bytes > (8ull << 20));  // 0 when the links between nodes were shared memory
  }
}

TEST_CASE("srun refusing the step is named as such with its words and not blamed on rank 0", "[cluster][launch]") {
  // SRUN_CPUS_PER_TASK asks more than a node has: srun cannot create the step. Read as a
  // rank's end, the summary would say "rank 0 exited with code 1 ... rank 0 wrote nothing
  // to stderr".
  requireTestbed();
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, kRank, "identity"}, {"SRUN_CPUS_PER_TASK=64"});
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(run.err.find("hvdrun: error: srun exited with code 1, and no rank reported a failure of its own") !=
        std::string::npos);
  CHECK(run.err.find("  srun's last words:\n    | srun: error: Unable to create step for job") != std::string::npos);
  CHECK(run.err.find("rank 0") == std::string::npos);
}

TEST_CASE("an allocation that has ended is named as the cause with what to do in a shell left from it",
          "[cluster][launch]") {
  // A tmux shell left from an salloc that has since ended still holds SLURM_JOB_ID and the
  // nodes: srun says "Slurm job N has expired", and hvdrun's hint was "srun could not start
  // the job, or lost a node or a daemon on the way".
  requireTestbed();
  auto env = inAllocation({"-N2"}, {"sh", "-c", "env | grep '^SLURM_'"});
  REQUIRE(env.exitCode == 0);
  std::vector<std::string> stale;
  std::istringstream lines(env.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("SLURM_CONF=", 0) != 0) stale.push_back(line);
  }
  REQUIRE(!stale.empty());
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith(stale);
  auto run = hvd::cli::runAndCapture({kHvdrun, "-np", "2", kRank, "identity"}, options);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 1);
  CHECK(run->err.find("  hint: the Slurm job in this shell's SLURM_JOB_ID has ended (variables left from an old salloc "
                      "or job?): get a new allocation, or run on this machine alone with --no-slurm\n") !=
        std::string::npos);
}

TEST_CASE("through srun a rank killed by SIGKILL ends the job with 137, and no rank survives", "[cluster][launch]") {
  requireTestbed();
  hvd::test::TempDir pids;
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, kRank, "fail", "1", "KILL", "30"}, {"HVD_TEST_PIDDIR=" + pids.path()});
  INFO(run.err);
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL (host node01, at ") != std::string::npos);
  auto pidList = hvd::test::readPidFiles(pids.path());
  CHECK(pidList.size() == 4);
  CHECK(hvd::test::survivorsAfter(pidList, std::chrono::seconds(2)).empty());
}

TEST_CASE("through srun hvdrun piped into a reader that exits stops every rank on every node and exits 141",
          "[cluster][launch]") {
  requireTestbed();
  hvd::test::TempDir pids;
  // Before, hvdrun ran on while nobody read: `timeout` ends such a run. The reader goes
  // only once every rank has started (a rank on a node slower to launch came after 64 KiB
  // of the others' output once, and srun aborted the step before it started).
  std::string reader = "(for i in $(seq 2000); do [ $(ls " + pids.path() +
                       " | wc -l) -ge 4 ] && break; head -c 4096 > /dev/null; done; head -c 65536 > /dev/null)";
  std::string pipeline = "timeout 20 " + kHvdrun + " --kill-grace 2 sh -c 'echo $$ > " + pids.path() +
                         "/$HOROVOD_RANK.pid; exec yes' | " + reader + "; echo status=${PIPESTATUS[0]}";
  auto run = inAllocation({"-N3", "-n4"}, {"bash", "-c", pipeline});
  INFO(run.out << run.err);
  CHECK(run.out.find("status=141") != std::string::npos);
  CHECK(run.err.find("the reader of its stdout went away") != std::string::npos);
  auto pidList = hvd::test::readPidFiles(pids.path());
  CHECK(pidList.size() == 4);
  CHECK(hvd::test::survivorsAfter(pidList, std::chrono::seconds(2)).empty());
}

TEST_CASE("through srun hvdrun -x gives every rank on every node the variable", "[cluster][launch]") {
  requireTestbed();
  auto run = inAllocation({"-N2", "-n2"}, {kHvdrun, "-x", "SET=a b", "-x", "OMP_NUM_THREADS=3", "sh", "-c",
                                           "echo \"$SET|$OMP_NUM_THREADS|$(env | grep -c '^OMP_NUM_THREADS=')\""});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 2; ++r) CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:a b|3|1\n") != std::string::npos);
}

TEST_CASE("srun options given with --srun-args reach the step and one hvdrun sets itself is refused naming it", "[cluster][launch]") {
  requireTestbed();
  auto run = inAllocation({"-N2", "-n2"}, {kHvdrun, "--srun-args", "--export=ALL,SEEN_BY_TASK=from-srun --quiet", "sh",
                                           "-c", "echo \"seen=$SEEN_BY_TASK\""});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 2; ++r) CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:seen=from-srun\n") != std::string::npos);
  auto refused = inAllocation({"-N2", "-n2"}, {kHvdrun, "--srun-args", "--gpu-bind=closest --ntasks=4", "true"});
  CHECK(refused.exitCode == 2);
  CHECK(refused.err.find("hvdrun: error: --srun-args: --ntasks is hvdrun's to set on the srun step") != std::string::npos);
  CHECK(refused.err.find("-np gives the number of ranks") != std::string::npos);
}

TEST_CASE("arguments reach ranks on other nodes verbatim through srun", "[cluster][launch]") {
  requireTestbed();
  auto run = inAllocation({"-N2", "-n2"}, {kHvdrun, kRank, "args", "two words", "$HOME", "", "'q'"});
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 2; ++r) {
    std::string p = "[" + std::to_string(r) + "]<stdout>:";
    CHECK(run.out.find(p + "arg 0 9:two words\n") != std::string::npos);
    CHECK(run.out.find(p + "arg 1 5:$HOME\n") != std::string::npos);
    CHECK(run.out.find(p + "arg 2 0:\n") != std::string::npos);
    CHECK(run.out.find(p + "arg 3 3:'q'\n") != std::string::npos);
  }
}

TEST_CASE("through srun and mpirun only the rank --stdin names reads hvdrun's stdin and it may be on another node",
          "[cluster][launch][mpi]") {
  requireTestbed();
  for (bool mpi : {false, true}) {
    INFO((mpi ? "mpirun" : "srun"));
    std::vector<std::string> command{kHvdrun, "--stdin", "2"};
    if (mpi) command.push_back("--mpi");
    command.insert(command.end(), {"sh", "-c", "echo \"read $HOROVOD_RANK $(hostname):$(tr '\\n' ' ')\""});
    std::vector<std::string> argv{"salloc", "-N3", "-n3"};
    argv.insert(argv.end(), command.begin(), command.end());
    hvd::cli::RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.stdinText = "p\nq\n";
    auto run = hvd::cli::runAndCapture(argv, options);
    REQUIRE(run.isOk());
    INFO(run->out << run->err);
    REQUIRE(run->exitCode == 0);
    CHECK(run->out.find("[2]<stdout>:read 2 node03:p q \n") != std::string::npos);
    CHECK(run->out.find("[0]<stdout>:read 0 node01:\n") != std::string::npos);
    CHECK(run->out.find("[1]<stdout>:read 1 node02:\n") != std::string::npos);
  }
}

TEST_CASE("when hvdrun is SIGKILLed inside a live allocation, no rank survives on any node", "[cluster][launch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string pidFile = dir.path() + "/hvdrun.pid";
  std::string pids = dir.path() + "/pids";
  REQUIRE(::mkdir(pids.c_str(), 0755) == 0);
  // The allocation's shell stays alive after hvdrun dies, as a user's would.
  std::string shell = kHvdrun + " " + kRank + " sleep 60 & echo $! > " + pidFile + "; wait; sleep 5";
  BackgroundJob job = startInAllocation(shell, pids, pidFile);
  auto rankPids = job.ranks;
  REQUIRE(::kill(job.hvdrun, SIGKILL) == 0);
  auto killed = std::chrono::steady_clock::now();
  // Usually 0.02-0.04 s; once, with the whole suite running beside the cluster, over 2 s.
  // Slurm's own bound for stopping a step is KillWait (5 s in the test cluster).
  CHECK(hvd::test::survivorsAfter(rankPids, std::chrono::seconds(5)).empty());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  if (took > 1.0) WARN("ranks were gone only after " << took << " s");
  int status = 0;
  ::waitpid(job.salloc, &status, 0);
}

TEST_CASE("when hvdrun is SIGKILLed with ranks behind one or two shells, through srun or mpirun, nothing survives on any node", "[cluster][launch][mpi]") {
  // The programs are the shells' children (grandchildren), not the processes srun or
  // mpirun started: whether Slurm's step teardown and Open MPI's daemons reach them is
  // what this checks, twice per shape.
  requireTestbed();
  for (const char* launcher : {"", "--mpi"}) {
    for (const char* wrapper : {"sh -c '" , "sh -c 'sh -c \"" }) {
      for (int trial = 0; trial < 2; ++trial) {
        bool two = std::string(wrapper).find("\"") != std::string::npos;
        INFO((*launcher ? "mpirun" : "srun") << ", " << (two ? "two shells" : "one shell") << ", trial " << trial);
        hvd::test::TempDir dir;
        std::string pidFile = dir.path() + "/hvdrun.pid";
        std::string pids = dir.path() + "/pids";
        REQUIRE(::mkdir(pids.c_str(), 0755) == 0);
        std::string program = kRank + " sleep 60; true";
        std::string command = std::string(wrapper) + program + (two ? "; true\"'" : "'");
        std::string shell = kHvdrun + " " + launcher + " " + command + " & echo $! > " + pidFile + "; wait; sleep 5";
        BackgroundJob job = startInAllocation(shell, pids, pidFile);
        REQUIRE(::kill(job.hvdrun, SIGKILL) == 0);
        auto survivors = hvd::test::survivorsAfter(job.ranks, std::chrono::seconds(5));
        CHECK(survivors.empty());
        for (int pid : survivors) ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(job.salloc, &status, 0);
      }
    }
  }
}

TEST_CASE("through mpirun each rank runs on its planned node with its identity and a distinct GPU", "[cluster][launch][mpi]") {
  requireTestbed();
  for (const char* gpuOption : {"--gpus-per-task=1", "--gres=gpu:2"}) {
    INFO(gpuOption);
    std::vector<std::string> salloc = std::string(gpuOption) == "--gres=gpu:2"
                                          ? std::vector<std::string>{"-N3", "--ntasks-per-node=2", gpuOption}
                                          : std::vector<std::string>{"-N3", "-n5", gpuOption};
    auto run = inAllocation(salloc, {kHvdrun, "--mpi", kRank, "identity"});
    INFO(run.out << run.err);
    REQUIRE(run.exitCode == 0);
    std::regex line(R"(\[(\d)\]<stdout>:rank=(\d) size=(\d) local_rank=(\d) local_size=(\d) cross_rank=(\d) cross_size=3 torch_rank=\d host=(\S+) gpus=(\S+))");
    std::map<std::string, std::set<std::string>> gpus;
    std::set<int> ranks;
    std::istringstream in(run.out);
    for (std::string l; std::getline(in, l);) {
      std::smatch m;
      if (!std::regex_match(l, m, line)) continue;
      CHECK(m[1] == m[2]);
      ranks.insert(std::stoi(m[2]));
      std::string expectedHost = "node0" + std::to_string(std::stoi(m[6]) + 1);
      CHECK(m[7] == expectedHost);
      CHECK(m[8] == m[4]);  // local rank r holds device r of its node
      CHECK(gpus[m[7]].insert(m[8]).second);
    }
    CHECK(ranks.size() == (std::string(gpuOption) == "--gres=gpu:2" ? 6u : 5u));
  }
}

TEST_CASE("the GPUs every rank gets equal the printed plan for every TF role and GPU option, through srun and mpirun",
          "[cluster][launch][mpi]") {
  requireTestbed();
  // A chief, three workers, a ps and an evaluator, two per node: node03 holds the ps and
  // the evaluator, which the plan gives no GPU whatever Slurm bound to their tasks.
  const std::vector<std::string> job{"--tf-config", "--tf-chief", "--tf-ps", "1", "--tf-evaluator"};
  for (const char* gpuOption : {"--gpus-per-task=1", "--gres=gpu:2", "--gpus-per-node=2"}) {
    for (bool mpi : {false, true}) {
      INFO(gpuOption << (mpi ? " through mpirun" : " through srun"));
      std::vector<std::string> command{kHvdrun};
      if (mpi) command.push_back("--mpi");
      command.insert(command.end(), job.begin(), job.end());
      std::vector<std::string> dry = command;
      dry.insert(dry.end(), {"--dry-run", kRank});
      // The job ends when its chief does (a ParameterServerStrategy job): every rank has
      // printed by the time the chief's second is up.
      command.insert(command.end(), {kRank, "identity", "1"});
      std::string shell;
      for (const auto* argv : {&dry, &command}) {
        for (const auto& a : *argv) shell += "'" + a + "' ";
        shell += "&& ";
      }
      shell += "true";
      auto run = inAllocation({"-N3", "--ntasks-per-node=2", gpuOption, "sh", "-c", shell}, {});
      INFO(run.out << run.err);
      REQUIRE(run.exitCode == 0);
      std::regex planLine(R"( *(\d+) +(\S+) +\d+ +\d+ +(\S+) +(chief|worker|ps|evaluator))");
      std::regex rankLine(R"(\[(\d)\]<stdout>:rank=(\d) .* host=(\S+) gpus=(\S*))");
      std::map<int, std::string> planned, seen, role;
      std::istringstream in(run.out);
      for (std::string l; std::getline(in, l);) {
        std::smatch m;
        if (std::regex_match(l, m, planLine)) {
          planned[std::stoi(m[1])] = m[2].str() + " gpus=" + (m[3] == "none" ? "" : m[3].str());
          role[std::stoi(m[1])] = m[4];
        } else if (std::regex_match(l, m, rankLine)) {
          seen[std::stoi(m[2])] = m[3].str() + " gpus=" + m[4].str();
        }
      }
      REQUIRE(planned.size() == 6);
      CHECK(seen == planned);
      CHECK(role[4] == "ps");
      CHECK(planned[4] == "node03 gpus=");
      CHECK(planned[5] == "node03 gpus=");
    }
  }
}

TEST_CASE("through mpirun a failing rank ends the job with its code and a summary", "[cluster][launch][mpi]") {
  requireTestbed();
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, "--mpi", kRank, "fail", "2", "3", "30"});
  INFO(run.err);
  CHECK(run.exitCode == 3);
  CHECK(run.err.find("hvdrun: error: rank 2 exited with code 3 (host node02, at ") != std::string::npos);
  CHECK(run.err.find("    | final words of rank 2\n") != std::string::npos);
}

TEST_CASE("through srun and mpirun a rank that shut hvd down and then failed is named and not the peers that failed for want of it",
          "[cluster][launch][mpi]") {
  requireTestbed();
  // Rank 2 (on node02) shuts hvd down, and exits 3 a second later: a Python rank whose
  // exception unwinds through hvd's atexit shutdown and then a slow interpreter teardown.
  // Its peers fail at once ("rank 2 shut hvd down") and exit 1; srun and mpirun would stop
  // the step as the first of them ended, killing rank 2 before it could say why.
  // Or dies of the SIGTERM its checkpoint handler re-raises, sent by nobody else.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  for (bool mpi : {false, true}) {
    for (std::string how : {"fail", "die"}) {
      std::vector<std::string> command{kHvdrun};
      if (mpi) command.push_back("--mpi");
      command.insert(command.end(), {kCollective, "leave-early", "1", "2", how});
      auto run = inAllocation({"-N3", "-n4"}, command);
      INFO((mpi ? "mpirun " : "srun ") << how << "\n" << run.err);
      if (how == "fail") {
        CHECK(run.exitCode == 3);
        CHECK(run.err.find("hvdrun: error: rank 2 exited with code 3 (host node02, at ") != std::string::npos);
      } else {
        CHECK(run.exitCode == 143);
        CHECK(run.err.find("hvdrun: error: rank 2 was killed by SIGTERM (host node02, at ") != std::string::npos);
      }
    }
  }
}

TEST_CASE("through srun a rank that shut hvd down and lingers is stopped 2 s after its peers fail and they stay the cause",
          "[cluster][launch]") {
  requireTestbed();
  // Rank 2 would sleep 30 s and exit 0: its going was its own business (an early finish), and
  // the peers' failures are the job's, named once the 2 s it is left have passed.
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  auto start = std::chrono::steady_clock::now();
  auto run = inAllocation({"-N3", "-n4"}, {kHvdrun, kCollective, "leave-early", "30", "2"});
  auto took = std::chrono::steady_clock::now() - start;
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [013] exited with code 1 \(host node0)")));
  CHECK(took < std::chrono::seconds(15));
}

TEST_CASE("through srun one SIGINT to hvdrun stops every rank and hvdrun exits 130", "[cluster][launch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string pids = dir.path() + "/pids", pidFile = dir.path() + "/hvdrun.pid", rcFile = dir.path() + "/rc";
  REQUIRE(::mkdir(pids.c_str(), 0755) == 0);
  std::string shell = kHvdrun + " " + kRank + " sleep 60 & echo $! > " + pidFile + "; wait $!; echo $? > " + rcFile;
  BackgroundJob job = startInAllocation(shell, pids, pidFile);
  auto rankPids = job.ranks;
  int hvdrunPid = job.hvdrun;
  pid_t salloc = job.salloc;
  auto start = std::chrono::steady_clock::now();
  REQUIRE(::kill(hvdrunPid, SIGINT) == 0);
  CHECK(hvd::test::survivorsAfter(rankPids, std::chrono::seconds(3)).empty());
  int status = 0;
  ::waitpid(salloc, &status, 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  int rc = -1;
  std::ifstream(rcFile) >> rc;
  CHECK(rc == 130);
}

TEST_CASE("ranks on every node reach hvdrun's rendezvous through srun; one that never does fails the job", "[cluster][launch]") {
  requireTestbed();
  auto all = inAllocation({"-N3", "-n4"}, {kHvdrun, "--start-timeout", "5", kRank, "register", "-1", "1"});
  INFO(all.out << all.err);
  CHECK(all.exitCode == 0);  // every rank, on three nodes, proved the secret and registered
  auto missing = inAllocation({"-N3", "-n4"}, {kHvdrun, "--start-timeout", "2", "--kill-grace", "1", kRank, "register", "2", "30"});
  INFO(missing.err);
  CHECK(missing.exitCode == 124);
  CHECK(missing.err.find("hvdrun: error: rank(s) 2 did not reach the rendezvous in time, while the other 3 did") !=
        std::string::npos);
}

namespace {

// Four ranks on the testbed's nodes through srun print each signal their handlers get;
// hvdrun is sent `signals` in turn. Returns the job's output and salloc's wait status.
std::pair<std::string, int> signalSrunRanks(const std::vector<int>& signals) {
  hvd::test::TempDir dir;
  std::string pids = dir.path() + "/pids", pidFile = dir.path() + "/hvdrun.pid", out = dir.path() + "/out";
  REQUIRE(::mkdir(pids.c_str(), 0755) == 0);
  std::string shell = kHvdrun + " --kill-grace 0.5 " + kRank + " signals 20 > " + out + " 2>&1 & echo $! > " + pidFile +
                      "; wait $!";
  BackgroundJob job = startInAllocation(shell, pids, pidFile);
  // A rank writes its pid file once its handlers are in (test_rank.cc).
  for (size_t i = 0; i < signals.size(); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(job.hvdrun, signals[i]);
  }
  int status = 0;
  ::waitpid(job.salloc, &status, 0);
  std::ifstream in(out);
  return {std::string((std::istreambuf_iterator<char>(in)), {}), status};
}

}  // namespace

TEST_CASE("SIGUSR2 sent to hvdrun reaches every rank on every node through srun", "[cluster][launch]") {
  requireTestbed();
  auto [text, status] = signalSrunRanks({SIGUSR2, SIGTERM});
  INFO(text);
  for (int r = 0; r < 4; ++r) CHECK(text.find("[" + std::to_string(r) + "]<stdout>:got SIGUSR2\n") != std::string::npos);
}

TEST_CASE("SIGQUIT sent to hvdrun is srun's to act on: the step ends at once and the job exits 131 with hvdrun's word",
          "[cluster][launch]") {
  // srun does not forward SIGQUIT: it means "forcing job termination" to srun, which kills
  // the tasks. Before, hvdrun itself died of it and said nothing.
  requireTestbed();
  auto [text, status] = signalSrunRanks({SIGQUIT});
  INFO(text);
  CHECK(text.find("hvdrun: interrupted by SIGQUIT; stopped 4 rank(s)") != std::string::npos);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGQUIT));
}

TEST_CASE("under srun a rank the OOM killer ends is named by its node's task shim as most likely out of memory",
          "[cluster][launch]") {
  // Rank 1, on node02, moves itself into a 64 MiB cgroup and allocates 256 MiB.
  requireTestbed();
  const std::string cgroup = hvd::test::makeMemoryCgroup(64u << 20);
  if (cgroup.empty()) {
    hvd::test::skipTest("no memory cgroup can be made here (needs root and cgroup v1's memory or v2's memory.max)");
  }
  auto run = inAllocation({"-N2", "-n2"}, {kHvdrun, "sh", "-c",
                                           "if [ \"$HVD_RANK\" = 1 ]; then echo $$ > " + cgroup +
                                               "/cgroup.procs && exec python3 -c 'b = bytearray(256 << 20)'; "
                                               "else sleep 30; fi"});
  hvd::test::removeCgroup(cgroup);
  INFO(run.err);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL (host node02") != std::string::npos);
  CHECK(run.err.find("  the kernel's OOM killer ended 1 process(es) on node02 while the rank ran (oom_kill in "
                     "/proc/vmstat): rank 1 most likely ran out of memory") != std::string::npos);
}

TEST_CASE("started by srun --mpi=pmix or mpirun without hvdrun, ranks on three nodes learn who they are from PMIx", "[cluster][launch][pmix]") {
  requireTestbed();
  const std::string kCollective = HVD_COLLECTIVE_RANK_PATH;
  // -N3 -n5 --ntasks-per-node=2, block distribution: two ranks on node01 and node02, one on node03
  // (so not homogeneous, on any rank).
  const std::vector<std::string> expected = {
      "rank=0 size=5 local_rank=0 local_size=2 cross_rank=0 cross_size=3 homogeneous=0 ops=tcp",
      "rank=1 size=5 local_rank=1 local_size=2 cross_rank=0 cross_size=3 homogeneous=0 ops=tcp",
      "rank=2 size=5 local_rank=0 local_size=2 cross_rank=1 cross_size=3 homogeneous=0 ops=tcp",
      "rank=3 size=5 local_rank=1 local_size=2 cross_rank=1 cross_size=3 homogeneous=0 ops=tcp",
      "rank=4 size=5 local_rank=0 local_size=1 cross_rank=2 cross_size=3 homogeneous=0 ops=tcp"};
  const std::vector<std::string> mpiEnv = {"OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,tcp", "OMPI_ALLOW_RUN_AS_ROOT=1",
                                           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  for (const std::vector<std::string>& launcher : {std::vector<std::string>{"srun", "--mpi=pmix", "-n", "5"},
                                                   std::vector<std::string>{"mpirun", "-np", "5"}}) {
    std::vector<std::string> identity = launcher, check = launcher;
    identity.insert(identity.end(), {kCollective, "identity"});
    check.insert(check.end(), {kCollective, "check"});
    auto run = inAllocation({"-N3", "-n5", "--ntasks-per-node=2"}, identity, mpiEnv);
    INFO(launcher.front() << "\n" << run.out << run.err);
    REQUIRE(run.exitCode == 0);
    for (const std::string& line : expected) CHECK(run.out.find(line + "\n") != std::string::npos);
    auto checked = inAllocation({"-N3", "-n5", "--ntasks-per-node=2"}, check, mpiEnv);
    INFO(checked.out << checked.err);
    CHECK(checked.exitCode == 0);
    CHECK(std::regex_search(checked.out, std::regex("(ok \\d+ checks on rank \\d of 5\n[^]*){5}")));
  }
}

#ifdef HVD_MPI_HELLO_PATH
TEST_CASE("an MPI program started through srun --mpi=pmix sees the planned ranks and can allreduce", "[cluster][launch][mpi]") {
  requireTestbed();
  auto start = [] {
    return inAllocation({"-N3", "-n5"}, {kHvdrun, "--pmix", HVD_MPI_HELLO_PATH},
                        {"OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,tcp"});
  };
  auto run = start();
  // Open MPI 4.1.4 under srun --mpi=pmix rarely segfaults inside MPI_Init on a loaded
  // machine (seen once in about 40 runs, in libc at address 0, before any hvdrun code in the
  // rank). One more try for exactly that, said out loud; any other failure fails at once.
  if (run.exitCode == 128 + SIGSEGV && run.err.find("Segmentation fault") != std::string::npos) {
    WARN("MPI_Init crashed in Open MPI; trying once more:\n" << run.err);
    run = start();
  }
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::regex line(R"(\[(\d)\]<stdout>:mpi_rank=(\d) mpi_size=5 sum=5 hvd_rank=(\d) host=(\S+))");
  std::set<int> ranks;
  std::istringstream in(run.out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    CHECK(m[1] == m[2]);
    CHECK(m[2] == m[3]);  // MPI's rank is hvdrun's rank
    ranks.insert(std::stoi(m[2]));
  }
  CHECK(ranks.size() == 5);
}
#endif

TEST_CASE("hvdrun in an sbatch script runs the job across the allocation", "[cluster][launch]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string out = dir.path() + "/out.txt";
  auto submitted = hvd::cli::runAndCapture({"sbatch", "--parsable", "-N3", "-n5", "-o", out, "--wrap",
                                            kHvdrun + " " + kRank + " identity"});
  REQUIRE(submitted.isOk());
  REQUIRE(submitted->succeeded());
  std::string id = submitted->out.substr(0, submitted->out.find_first_of(";\n"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto q = hvd::cli::runAndCapture({"squeue", "-h", "-j", id});
    if (q && q->out.find(id) == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  INFO(text);
  std::set<std::string> hosts;
  std::regex line(R"(\[(\d)\]<stdout>:rank=(\d) size=5 .* host=(\S+) gpus=\S+)");
  std::istringstream lines(text);
  int count = 0;
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) ++count, hosts.insert(m[3]);
  }
  CHECK(count == 5);
  CHECK(hosts == std::set<std::string>{"node01", "node02", "node03"});
}

TEST_CASE("hvdrun inside a running step starts its own step with --overlap", "[cluster][launch]") {
  requireTestbed();
  auto run = inAllocation({"-N3", "-n3"}, {"srun", "-N1", "-n1", kHvdrun, kRank, "identity"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  int count = 0;
  std::istringstream lines(run.out);
  for (std::string l; std::getline(lines, l);) count += l.find("<stdout>:rank=") != std::string::npos;
  CHECK(count == 3);
}
