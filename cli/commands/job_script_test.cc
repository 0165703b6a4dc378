// cli/commands/job_script_test.cc: rendered job scripts against the golden files in
// templates/golden/ (HVD_UPDATE_GOLDEN=1 rewrites them; review the diff before committing).
#include "cli/commands/job_script.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "templates/embedded_templates.h"

using hvd::cli::Options;
using hvd::cli::parseOptions;

namespace {

std::string render(const std::vector<std::string>& args) {
  Options o = parseOptions(args);
  hvd::cli::JobScriptContext context{"/opt/hvdrun/bin/hvdrun", "1.2.3",
                                     *hvd::templates::embeddedTemplate("sbatch.sh"), "sbatch.sh"};
  auto script = hvd::cli::renderJobScript(o, context);
  INFO(script.status().message());
  REQUIRE(script.isOk());
  return *script;
}

void checkGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(HVD_SOURCE_DIR) + "/templates/golden/" + name;
  if (std::getenv("HVD_UPDATE_GOLDEN") != nullptr) std::ofstream(path, std::ios::binary) << actual;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(actual == expected.str());
}

}  // namespace

TEST_CASE("the script for a plain -np 4 run matches its golden file", "[unit][golden]") {
  checkGolden("minimal.sh", render({"--dry-run", "-np", "4", "./train.py", "--epochs", "3"}));
}

TEST_CASE("the script with every #SBATCH option, setup and requeue matches its golden file", "[unit][golden]") {
  checkGolden("full.sh",
              render({"--dry-run", "-np", "16", "--gpus-per-node", "4", "--cpus-per-task", "8", "--time", "2:00:00",
                      "--partition", "a100", "--account", "proj-x", "--qos", "high", "--constraint", "ib",
                      "--mem", "200G", "--job-name", "resnet 50", "--job-output", "logs/%x-%j.out", "--sbatch-arg",
                      "--exclusive", "--module", "cuda/12.2", "--module", "nccl", "--env", "NCCL_DEBUG=WARN",
                      "--env", "TAG=it's $HOME", "--venv", "/work/my env", "--setup", "ulimit -n 65536",
                      "--requeue", "--preempt-grace", "45", "--timestamp-output", "--", "python", "train.py",
                      "--lr", "0.1"}));
}

TEST_CASE("program arguments with quotes, dollars, backticks and newlines are quoted, not interpreted", "[unit][golden]") {
  checkGolden("quoting.sh", render({"--dry-run", "--", "./my prog", "it's", "$HOME", "`id`", "a\nb", "\"q\"", "",
                                    "x;rm -rf /", "--flag=$(date)"}));
}

TEST_CASE("an export that is not NAME=value is refused, naming it", "[unit]") {
  Options o = parseOptions({"--env", "1BAD=x", "prog"});
  hvd::cli::JobScriptContext context{"hvdrun", "1", "{{launch}}", "t"};
  auto script = hvd::cli::renderJobScript(o, context);
  REQUIRE_FALSE(script.isOk());
  CHECK(script.status().message() == "--env '1BAD=x': expected NAME=value with NAME a shell variable name");
}

TEST_CASE("torchrun's --nproc-per-node asks Slurm for that many tasks on every node and more is refused", "[unit]") {
  std::string script = render({"--dry-run", "--nproc-per-node", "4", "--nodes", "2", "--", "train.py"});
  CHECK(script.find("#SBATCH --nodes=2\n") != std::string::npos);
  CHECK(script.find("#SBATCH --ntasks-per-node=4\n") != std::string::npos);
  Options fewer = parseOptions({"--nproc-per-node", "4", "--ntasks-per-node", "2", "prog"});
  hvd::cli::JobScriptContext context{"hvdrun", "1", "{{launch}}", "t"};
  auto refused = hvd::cli::renderJobScript(fewer, context);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().message() ==
        "--nproc-per-node 4 is more than the 2 task(s) per node --ntasks-per-node asks Slurm for");
  // torchrun's --nnodes is the job's node count.
  std::string three = render({"--dry-run", "--nnodes", "3", "--nproc-per-node", "2", "--", "train.py"});
  CHECK(three.find("#SBATCH --nodes=3\n") != std::string::npos);
  CHECK(three.find("#SBATCH --ntasks-per-node=2\n") != std::string::npos);
  auto clash = hvd::cli::renderJobScript(parseOptions({"--nnodes", "3", "--nodes", "2", "prog"}), context);
  REQUIRE_FALSE(clash.isOk());
  CHECK(clash.status().message() == "--nnodes 3 and --nodes 2 disagree on the job's node count");
}
