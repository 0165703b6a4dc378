// tests/slurm/cluster_allocation_test.cc: allocations built from the environments a real
// Slurm cluster gives (tests/slurm/testbed.sh starts it; this binary runs under it), for
// salloc, the sbatch batch step, srun steps with --gpus-per-task=1 and --gres=gpu:2,
// uneven tasks per node, and mpirun ranks. The truth each answer is checked against is
// independent of our parser: the task's real hostname (each node has its own), the
// testbed's node names, and the counts the test asked Slurm for.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/hvdrun_runner.h"

namespace {

using Fields = std::map<std::string, std::string>;

const std::string kProbe = HVD_ALLOCATION_PROBE_PATH;

void requireTestbed() {
  if (std::getenv("HVD_TESTBED_DIR") == nullptr || std::getenv("SLURM_CONF") == nullptr) {
    hvd::test::skipTest("not running under tests/slurm/testbed.sh (no HVD_TESTBED_DIR / SLURM_CONF)");
  }
}

std::vector<std::string> testbedNodes() {
  std::vector<std::string> nodes;
  std::istringstream in(std::getenv("HVD_TESTBED_NODES"));
  for (std::string n; std::getline(in, n, ',');) nodes.push_back(n);
  return nodes;
}

Fields parse(const std::string& line) {
  Fields f;
  std::istringstream in(line);
  for (std::string kv; in >> kv;) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) f[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return f;
}

std::vector<Fields> run(const std::vector<std::string>& argv) {
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  auto r = hvd::cli::runAndCapture(argv, options);
  REQUIRE(r.isOk());
  INFO("command output:\n" << r->out << r->err);
  REQUIRE(r->succeeded());
  std::vector<Fields> out;
  std::istringstream in(r->out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("hostname=", 0) == 0) out.push_back(parse(line));
  }
  return out;
}

// Submits a batch job and polls until it leaves the queue (sbatch --wait polls slowly).
// Returns the job's final state as scontrol reports it.
std::string submitAndWait(const std::vector<std::string>& sbatchArgs) {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), sbatchArgs.begin(), sbatchArgs.end());
  auto submitted = hvd::cli::runAndCapture(argv);
  REQUIRE(submitted.isOk());
  INFO(submitted->err);
  REQUIRE(submitted->succeeded());
  std::string id = submitted->out.substr(0, submitted->out.find_first_of(";\n"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string state;
  while (std::chrono::steady_clock::now() < deadline) {
    auto q = hvd::cli::runAndCapture({"scontrol", "show", "job", id, "-o"});
    REQUIRE(q.isOk());
    auto at = q->out.find("JobState=");
    state = at == std::string::npos ? "" : q->out.substr(at + 9, q->out.find(' ', at) - at - 9);
    if (state != "PENDING" && state != "RUNNING" && state != "COMPLETING" && state != "CONFIGURING") return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL("job " << id << " did not finish within 60 s (last state " << state << ")");
  return state;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Checks what every task of a step must satisfy, whatever the options.
void checkStepTasks(const std::vector<Fields>& tasks, int expectedSize, const std::vector<std::string>& expectedTasks) {
  const auto nodes = testbedNodes();
  REQUIRE(tasks.size() == static_cast<size_t>(expectedSize));
  std::set<int> ranks;
  std::map<std::string, std::set<int>> localRanks;
  for (const Fields& t : tasks) {
    INFO("task: hostname=" << t.at("hostname") << " rank=" << t.at("rank") << " node_index=" << t.at("node_index"));
    CHECK(t.at("context") == "step");
    CHECK(t.at("source") == "slurm");
    CHECK(t.at("nodes") == join(nodes));
    CHECK(t.at("tasks") == join(expectedTasks));
    CHECK(t.at("size") == std::to_string(expectedSize));
    int nodeIndex = std::stoi(t.at("node_index"));
    REQUIRE(nodeIndex >= 0);
    REQUIRE(static_cast<size_t>(nodeIndex) < nodes.size());
    CHECK(nodes[static_cast<size_t>(nodeIndex)] == t.at("hostname"));  // the real hostname
    CHECK(t.at("local_size") == expectedTasks[static_cast<size_t>(nodeIndex)]);
    ranks.insert(std::stoi(t.at("rank")));
    localRanks[t.at("hostname")].insert(std::stoi(t.at("local")));
  }
  CHECK(ranks.size() == static_cast<size_t>(expectedSize));
  CHECK(*ranks.rbegin() == expectedSize - 1);
  for (const auto& [host, locals] : localRanks) {
    INFO(host);
    CHECK(*locals.rbegin() == static_cast<int>(locals.size()) - 1);  // dense 0..n-1
  }
}

}  // namespace

TEST_CASE("an salloc shell is read as the whole allocation, without a task identity", "[cluster]") {
  requireTestbed();
  auto out = run({"salloc", "-N3", "-n5", "--gpus-per-task=1", kProbe});
  REQUIRE(out.size() == 1);
  CHECK(out[0].at("context") == "allocation");
  CHECK(out[0].at("nodes") == join(testbedNodes()));
  CHECK(out[0].at("tasks") == "2,2,1");
  CHECK(out[0].at("node_gpus") == "2,2,1");
  CHECK(out[0].at("total") == "5");
  CHECK(out[0].count("rank") == 0);
}

TEST_CASE("srun --gpus-per-task=1 tasks each see their own GPU, distinct on their node", "[cluster]") {
  requireTestbed();
  auto tasks = run({"srun", "-N3", "-n5", "--gpus-per-task=1", kProbe});
  checkStepTasks(tasks, 5, {"2", "2", "1"});
  std::map<std::string, std::set<std::string>> devices;
  for (const Fields& t : tasks) {
    INFO(t.at("hostname") << " rank " << t.at("rank"));
    CHECK(t.at("binding") == "per-task");
    CHECK(t.at("visible").find(',') == std::string::npos);
    devices[t.at("hostname")].insert(t.at("visible"));
  }
  CHECK(devices.at(testbedNodes()[0]).size() == 2);
}

TEST_CASE("srun --gres=gpu:2 tasks all see their node's two GPUs", "[cluster]") {
  requireTestbed();
  auto tasks = run({"srun", "-N3", "-n5", "--gres=gpu:2", kProbe});
  checkStepTasks(tasks, 5, {"3", "1", "1"});
  for (const Fields& t : tasks) {
    CHECK(t.at("binding") == "per-node");
    CHECK(t.at("visible") == "0,1");
  }
}

TEST_CASE("an uneven step of 6 tasks on 3 four-CPU nodes is read as 4,1,1", "[cluster]") {
  requireTestbed();
  checkStepTasks(run({"srun", "-N3", "-n6", kProbe}), 6, {"4", "1", "1"});
}

TEST_CASE("the sbatch batch step is task 0 on the first node with the job's GPUs", "[cluster]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string script = dir.path() + "/job.sh", output = dir.path() + "/out.txt";
  std::ofstream(script) << "#!/bin/sh\n" << kProbe << "\n";
  submitAndWait({"-N3", "--ntasks-per-node=2", "--gpus-per-node=2", "-o", output, script});
  std::ifstream in(output);
  std::string line;
  REQUIRE(std::getline(in, line));
  Fields f = parse(line);
  CHECK(f.at("context") == "batch");
  CHECK(f.at("hostname") == testbedNodes()[0]);
  CHECK(f.at("rank") == "0");
  CHECK(f.at("size") == "1");
  CHECK(f.at("tasks") == "2,2,2");
  CHECK(f.at("node_gpus") == "2,2,2");
  CHECK(f.at("visible") == "0,1");
  CHECK(f.at("binding") == "per-node");
}

TEST_CASE("mpirun ranks inside sbatch take their identity from Open MPI, not the inherited step", "[cluster][mpi]") {
  requireTestbed();
  hvd::test::TempDir dir;
  std::string script = dir.path() + "/job.sh", output = dir.path() + "/out.txt";
  std::ofstream(script) << "#!/bin/sh\nexport OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
                        << "export OMPI_MCA_btl=self,tcp OMPI_MCA_pml=ob1\n"
                        << "mpirun -np 6 --bind-to none " << kProbe << "\n";
  std::string state = submitAndWait({"-N3", "--ntasks-per-node=2", "-o", output, script});
  std::ifstream in(output);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  INFO(content);
  CHECK(state == "COMPLETED");
  std::vector<Fields> ranks;
  std::istringstream lines(content);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("hostname=", 0) == 0) ranks.push_back(parse(line));
  }
  REQUIRE(ranks.size() == 6);
  std::set<std::string> seen;
  std::map<std::string, std::set<std::string>> localByHost;
  const auto nodes = testbedNodes();
  for (const Fields& r : ranks) {
    CHECK(r.at("source") == "openmpi");
    CHECK(r.at("size") == "6");
    seen.insert(r.at("rank"));
    localByHost[r.at("hostname")].insert(r.at("local"));
    CHECK(r.at("node_index") == "-1");  // Open MPI does not say; the launcher resolves it
    CHECK(r.at("nodes") == join(nodes));
  }
  CHECK(seen.size() == 6);
  CHECK(localByHost.size() == 3);
  for (const auto& [host, locals] : localByHost) CHECK(locals == std::set<std::string>{"0", "1"});
}
