// tests/slurm/cluster_training_libraries_test.cc: PyTorch Lightning and Accelerate, as users
// run them on a cluster: `hvdrun python train.py` in a batch script, on 2 nodes x 1 task
// and 2 nodes x 2 tasks of the real test cluster. Each library finds its world from what
// hvdrun exports; every rank must be where hvdrun's plan put it (ranks in blocks by node)
// and end on the same loss as the others.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "cli/plan/shell_quote.h"
#include "tests/slurm/slurm_jobs.h"
#include "tests/support/hvdrun_runner.h"

namespace {

const std::string kHvdrun = HVD_HVDRUN_PATH;
const std::string kPython = std::string(HVD_SOURCE_DIR) + "/.venv/bin/python";
const std::string kRanks = std::string(HVD_SOURCE_DIR) + "/python/tests/ranks/";

void requireLibraries() {
  if (::access(kPython.c_str(), X_OK) != 0) hvd::test::skipTest("no .venv (scripts/setup.sh makes it)");
  auto found = hvd::test::runCommand({kPython, "-c", "import pytorch_lightning, accelerate"});
  if (found.exitCode != 0) {
    hvd::test::skipTest("pytorch-lightning or accelerate is not in .venv (README's test command installs them)");
  }
}

// What one rank printed: "[N]<stdout>:key=value key=value ...".
struct RankLine {
  int hvdrunRank = -1;
  std::map<std::string, std::string> fields;
};

std::vector<RankLine> rankLines(const std::string& out, const std::string& firstKey) {
  std::vector<RankLine> lines;
  std::istringstream in(out);
  std::regex prefix(R"(\[(\d+)\]<stdout>:(.*))");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, prefix) || m[2].str().rfind(firstKey + "=", 0) != 0) continue;
    RankLine line{std::stoi(m[1]), {}};
    std::istringstream words(m[2].str());
    for (std::string word; words >> word;) {
      size_t eq = word.find('=');
      if (eq != std::string::npos) line.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

// Writes a batch script of `nodes` x `perNode` tasks that runs each command under hvdrun
// in turn (stopping at the first failure), submits it, waits for its end; its stdout.
std::string runBatchJob(const std::string& dir, int nodes, int perNode, const std::vector<std::string>& commands) {
  std::ofstream script(dir + "/job.sh");
  script << "#!/bin/sh\n#SBATCH --nodes=" << nodes << " --ntasks-per-node=" << perNode
         << "\nset -e\ncd " << hvd::cli::shellQuote(dir) << "\n";
  for (const std::string& command : commands) script << hvd::cli::shellQuote(kHvdrun) << " " << command << "\n";
  script.close();
  ::chmod((dir + "/job.sh").c_str(), 0755);
  auto submitted = hvd::test::runCommand(
      {"sbatch", "--parsable", "--job-name=libraries", "-o", dir + "/out", "-e", dir + "/err", dir + "/job.sh"});
  INFO(submitted.err);
  REQUIRE(submitted.exitCode == 0);
  std::string id = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  hvd::test::waitForEnd(id, std::chrono::seconds(240));
  std::string out = hvd::test::readFile(dir + "/out");
  INFO(out << hvd::test::readFile(dir + "/err"));
  CHECK(hvd::test::jobField(id, "ExitCode") == "0:0");
  return out;
}

// Rank r of a block placement of `nodes` x `perNode`: node r / perNode, local rank r % perNode.
std::string node(int rank, int perNode) { return "node0" + std::to_string(1 + rank / perNode); }

}  // namespace

TEST_CASE("Lightning's Trainer(strategy=\"ddp\") in a batch job puts every rank where hvdrun's plan does, on 2x1 and "
          "2x2 tasks, choosing its cluster environment or told to read Slurm's, and all end on one loss",
          "[cluster][framework][python]") {
  hvd::test::requireTestbed();
  requireLibraries();
  for (auto [nodes, perNode] : {std::pair{2, 1}, std::pair{2, 2}}) {
    hvd::test::TempDir dir;
    std::string args = std::to_string(nodes) + " " + std::to_string(perNode) + " " + dir.path();
    std::string out = runBatchJob(dir.path(), nodes, perNode,
                                  {kPython + " " + kRanks + "lightning_train.py " + args,
                                   kPython + " " + kRanks + "lightning_train.py " + args + " slurm"});
    std::vector<RankLine> lines = rankLines(out, "global_rank");
    const int world = nodes * perNode;
    REQUIRE(lines.size() == static_cast<size_t>(2 * world));
    std::map<std::string, std::set<std::string>> losses;  // per cluster environment
    std::map<std::string, std::set<int>> ranks;
    for (const RankLine& line : lines) {
      auto f = line.fields;
      INFO("hvdrun rank " << line.hvdrunRank << ": " << f["environment"] << " global_rank=" << f["global_rank"]
                          << " local_rank=" << f["local_rank"] << " node_rank=" << f["node_rank"] << " host=" << f["host"]);
      CHECK(f["global_rank"] == std::to_string(line.hvdrunRank));
      CHECK(f["world_size"] == std::to_string(world));
      CHECK(f["local_rank"] == std::to_string(line.hvdrunRank % perNode));
      CHECK(f["node_rank"] == std::to_string(line.hvdrunRank / perNode));
      CHECK(f["host"] == node(line.hvdrunRank, perNode));
      losses[f["environment"]].insert(f["loss"]);
      ranks[f["environment"]].insert(line.hvdrunRank);
    }
    // Once as Lightning chose (torchelastic's variables come first), once from Slurm's.
    REQUIRE(ranks.size() == 2);
    CHECK(ranks.count("SLURMEnvironment") == 1);
    for (const auto& [environment, seen] : ranks) {
      INFO(environment);
      CHECK(seen.size() == static_cast<size_t>(world));
      CHECK(losses[environment].size() == 1);
    }
  }
}

TEST_CASE("an Accelerate loop in a batch job of 2x2 tasks puts every rank where hvdrun's plan does and all end on one "
          "loss",
          "[cluster][framework][python]") {
  hvd::test::requireTestbed();
  requireLibraries();
  hvd::test::TempDir dir;
  std::string out = runBatchJob(dir.path(), 2, 2, {kPython + " " + kRanks + "accelerate_train.py"});
  std::vector<RankLine> lines = rankLines(out, "process_index");
  REQUIRE(lines.size() == 4);
  std::set<std::string> losses;
  for (const RankLine& line : lines) {
    auto f = line.fields;
    INFO("hvdrun rank " << line.hvdrunRank << ": process_index=" << f["process_index"] << " host=" << f["host"]);
    CHECK(f["process_index"] == std::to_string(line.hvdrunRank));
    CHECK(f["local_process_index"] == std::to_string(line.hvdrunRank % 2));
    CHECK(f["num_processes"] == "4");
    CHECK(f["distributed_type"] == "MULTI_CPU");
    CHECK(f["host"] == node(line.hvdrunRank, 2));
    losses.insert(f["loss"]);
  }
  CHECK(losses.size() == 1);
}
