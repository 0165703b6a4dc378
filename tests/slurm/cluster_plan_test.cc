// tests/slurm/cluster_plan_test.cc: `hvdrun --dry-run --format json`, run inside real
// allocations of the test cluster, agrees with what srun then reports for every task
// (SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, hostname), and gives every rank a distinct
// GPU of its node, for --gpus-per-task=1 and for --gres=gpu:2, with uneven tasks.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

namespace {

struct PlannedRank {
  std::string host, local, cross, gpus;
};

struct SrunTask {
  std::string local, node, host, visible;
};

struct Observed {
  std::map<int, PlannedRank> plan;
  std::map<int, SrunTask> srun;
  std::string planErr;
  int planExit = -1;
};

void requireTestbed() {
  if (std::getenv("HVD_TESTBED_DIR") == nullptr) hvd::test::skipTest("not running under tests/slurm/testbed.sh");
}

// Inside one allocation: hvdrun's dry run, then srun's own account of every task.
Observed observe(const std::vector<std::string>& sallocArgs, const std::string& hvdrunArgs = "") {
  std::string script = std::string(HVD_HVDRUN_PATH) + " --dry-run --format json " + hvdrunArgs +
                       " 2>/tmp/hvd-plan-err.$SLURM_JOB_ID; echo \"PLAN_EXIT $?\"; cat /tmp/hvd-plan-err.$SLURM_JOB_ID; "
                       "srun sh -c 'echo TASK $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $(hostname) "
                       "${CUDA_VISIBLE_DEVICES:-none}'";
  std::vector<std::string> argv{"salloc"};
  argv.insert(argv.end(), sallocArgs.begin(), sallocArgs.end());
  argv.insert(argv.end(), {"sh", "-c", script});
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  auto run = hvd::cli::runAndCapture(argv, options);
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  REQUIRE(run->succeeded());
  Observed o;
  std::regex rankRe(R"re(\{"rank":(\d+),"host":"([^"]+)","local_rank":(\d+),"local_size":\d+,"cross_rank":(\d+),"cross_size":\d+,"gpus":\[([^\]]*)\])re");
  for (std::sregex_iterator it(run->out.begin(), run->out.end(), rankRe), end; it != end; ++it) {
    std::string gpus = std::regex_replace((*it)[5].str(), std::regex("\""), "");
    o.plan[std::stoi((*it)[1])] = {(*it)[2], (*it)[3], (*it)[4], gpus};
  }
  std::istringstream lines(run->out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "PLAN_EXIT") in >> o.planExit;
    if (tag != "TASK") continue;
    int rank = 0;
    SrunTask t;
    in >> rank >> t.local >> t.node >> t.host >> t.visible;
    o.srun[rank] = t;
  }
  o.planErr = run->out;
  return o;
}

void checkAgreement(const Observed& o, size_t ranks) {
  REQUIRE(o.planExit == 0);
  REQUIRE(o.plan.size() == ranks);
  REQUIRE(o.srun.size() == ranks);
  std::map<std::string, std::set<std::string>> gpusPerHost;
  for (const auto& [rank, p] : o.plan) {
    const SrunTask& t = o.srun.at(rank);
    INFO("rank " << rank);
    CHECK(p.host == t.host);
    CHECK(p.local == t.local);
    CHECK(p.cross == t.node);
    REQUIRE_FALSE(p.gpus.empty());
    CHECK(gpusPerHost[p.host].insert(p.gpus).second);  // distinct on its node
  }
}

}  // namespace

TEST_CASE("the plan in a --gpus-per-task=1 allocation matches srun task for task, GPUs included", "[cluster][plan]") {
  requireTestbed();
  Observed o = observe({"-N3", "-n5", "--gpus-per-task=1"});
  checkAgreement(o, 5);
  for (const auto& [rank, p] : o.plan) CHECK(p.gpus == o.srun.at(rank).visible);  // Slurm bound the same device
}

TEST_CASE("the plan in a --gres=gpu:2 allocation gives each rank its own of the node's two GPUs", "[cluster][plan]") {
  requireTestbed();
  Observed o = observe({"-N3", "--ntasks-per-node=2", "--gres=gpu:2"});
  checkAgreement(o, 6);
  for (const auto& [rank, p] : o.plan) {
    CHECK(o.srun.at(rank).visible == "0,1");  // srun shows every task both
    CHECK((p.gpus == "0" || p.gpus == "1"));
  }
}

TEST_CASE("an uneven --gres=gpu:2 allocation with three ranks on a node is refused, naming it", "[cluster][plan]") {
  requireTestbed();
  Observed refused = observe({"-N3", "-n5", "--gres=gpu:2"});
  CHECK(refused.planExit == 2);
  CHECK(refused.planErr.find("hvdrun: error: host node01 offers 2 GPU(s) but its 3 rank(s) need 3 (1 each)") !=
        std::string::npos);
  Observed shared = observe({"-N3", "-n5", "--gres=gpu:2"}, "--oversubscribe-gpus");
  REQUIRE(shared.planExit == 0);
  CHECK(shared.plan.at(2).gpus == "0");  // the third rank on node01 shares device 0
  CHECK(shared.plan.at(3).host == shared.srun.at(3).host);
}
