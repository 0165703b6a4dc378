// tests/e2e/sbatch_e2e_test.cc: `hvdrun sbatch` without a cluster: what --dry-run prints
// (the golden files check every byte; here, the binary's own path and version), templates
// from the user, and the exact errors.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::TempDir;
using hvd::test::withEnv;

namespace {

std::string readGolden(const std::string& name) {
  std::ifstream in(std::string(HVD_SOURCE_DIR) + "/templates/golden/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

TEST_CASE("hvdrun sbatch --dry-run prints the golden script with this hvdrun's path in the launch line", "[e2e][sbatch]") {
  auto run = runHvdrun({"sbatch", "--dry-run", "-np", "4", "./train.py", "--epochs", "3"},
                       withEnv(environmentWith({"XDG_CONFIG_HOME=/nonexistent"})));
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  std::string expected = replaceAll(readGolden("minimal.sh"), "/opt/hvdrun/bin/hvdrun", HVD_HVDRUN_PATH);
  std::string versionLine = run.out.substr(run.out.find("hvdrun "), run.out.find(" (hvdrun sbatch)") - run.out.find("hvdrun "));
  expected = replaceAll(expected, "hvdrun 1.2.3", versionLine);
  CHECK(run.out == expected);
}

TEST_CASE("sbatch's short options make the same script as the long ones, and stop at the program", "[e2e][sbatch]") {
  // As sbatch users type them, values apart or attached; the program's own -N and -p stay its.
  auto shortForms = runHvdrun({"sbatch", "--dry-run", "-N", "2", "-t", "1:00:00", "-pgpu", "-A", "proj", "-q", "high",
                               "-C", "a100", "-c4", "-J", "myjob", "-o", "out.%j", "-e", "err.%j", "-np", "8", "--",
                               "python", "train.py", "-N", "3", "-p", "x"});
  auto longForms = runHvdrun({"sbatch", "--dry-run", "--nodes", "2", "--time", "1:00:00", "--partition", "gpu",
                              "--account", "proj", "--qos", "high", "--constraint", "a100", "--cpus-per-task", "4",
                              "--job-name", "myjob", "--job-output", "out.%j", "--job-error", "err.%j", "-np", "8", "--",
                              "python", "train.py", "-N", "3", "-p", "x"});
  INFO(shortForms.err);
  CHECK(shortForms.exitCode == 0);
  CHECK(shortForms.out == longForms.out);
  CHECK(shortForms.out.find("#SBATCH --partition=gpu\n") != std::string::npos);
  CHECK(shortForms.out.find("#SBATCH --cpus-per-task=4\n") != std::string::npos);
  CHECK(shortForms.out.find("-- python train.py -N 3 -p x\n") != std::string::npos);
  // The help says which is which (-p above all).
  CHECK(runHvdrun({"sbatch", "--help"}).out.find("-p (--partition; not --ssh-port here)") != std::string::npos);
}

TEST_CASE("hvdrun sbatch needs exactly one of --dry-run and --submit", "[e2e][sbatch]") {
  auto neither = runHvdrun({"sbatch", "--", "prog"});
  CHECK(neither.exitCode == 2);
  CHECK(neither.err == "hvdrun: error: hvdrun sbatch needs --dry-run or --submit\n"
                       "  hint: --dry-run prints the job script, --submit hands it to sbatch; usage: hvdrun sbatch "
                       "(--dry-run|--submit) [options] -- program [args...]\n");
  CHECK(runHvdrun({"sbatch", "--dry-run", "--submit", "prog"}).exitCode == 2);
  auto noProgram = runHvdrun({"sbatch", "--dry-run"});
  CHECK(noProgram.exitCode == 2);
  CHECK(noProgram.err.rfind("hvdrun: error: no program for the job to run\n", 0) == 0);
}

TEST_CASE("hosts cannot be given to a job script, which reads its allocation", "[e2e][sbatch]") {
  auto run = runHvdrun({"sbatch", "--dry-run", "-H", "a:2,b:2", "prog"});
  CHECK(run.exitCode == 2);
  CHECK(run.err.rfind("hvdrun: error: --hosts cannot be used in a job script\n", 0) == 0);
}

TEST_CASE("elastic options the job script's hvdrun would refuse under Slurm are refused before the job is written",
          "[e2e][sbatch]") {
  // Before, the script was written (and submitted), and the job failed when it started.
  auto discovery = runHvdrun({"sbatch", "--dry-run", "-np", "4", "--min-np", "2", "--host-discovery-script",
                              "/bin/true", "prog"});
  CHECK(discovery.exitCode == 2);
  CHECK(discovery.out.empty());
  CHECK(discovery.err.rfind("hvdrun: error: --host-discovery-script: hvdrun grows elastic jobs with ranks it starts "
                            "itself (on this machine, or over ssh with -H), and this job runs on a Slurm allocation\n",
                            0) == 0);
  // The way horovodrun grows inside an allocation: over ssh to its nodes.
  CHECK(discovery.err.find("--no-slurm -H") != std::string::npos);
  auto mpi = runHvdrun({"sbatch", "--dry-run", "--mpi", "--min-np", "2", "prog"});
  CHECK(mpi.exitCode == 2);
  CHECK(mpi.err.rfind("hvdrun: error: --min-np: elastic jobs need hvdrun to hear of each rank's end", 0) == 0);
  auto unelastic = runHvdrun({"sbatch", "--dry-run", "--reset-limit", "3", "prog"});
  CHECK(unelastic.exitCode == 2);
  CHECK(unelastic.err.rfind("hvdrun: error: --reset-limit is for elastic jobs, and this one has no --min-np\n", 0) == 0);
  // --min-np alone runs under Slurm: the script is written.
  CHECK(runHvdrun({"sbatch", "--dry-run", "-np", "4", "--min-np", "2", "prog"}).exitCode == 0);
}

TEST_CASE("a user's template gets the same parts, and a misspelt placeholder is refused with its place", "[e2e][sbatch]") {
  TempDir dir;
  std::string good = dir.path() + "/good.sh";
  std::ofstream(good) << "#!/bin/bash\n{{directives}}\n# {{job_name}}: {{nodes}} x {{ntasks_per_node}}\n{{launch}}\n";
  auto run = runHvdrun({"sbatch", "--dry-run", "--template", good, "--nodes", "2", "--ntasks-per-node", "3", "--", "a b"});
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("# a b: 2 x 3\n") != std::string::npos);
  CHECK(run.out.find("#SBATCH --nodes=2\n") != std::string::npos);
  CHECK(run.out.find("-- 'a b'\n") != std::string::npos);

  std::string bad = dir.path() + "/bad.sh";
  std::ofstream(bad) << "#!/bin/bash\n{{directives}}\n  {{lanch}}\n";
  auto refused = runHvdrun({"sbatch", "--dry-run", "--template", bad, "prog"});
  CHECK(refused.exitCode == 2);
  CHECK(refused.err.rfind("hvdrun: error: " + bad + ":3:3: unknown placeholder '{{lanch}}' (did you mean '{{launch}}'?)\n", 0) == 0);
}

TEST_CASE("impossible or malformed job requests name the option and value", "[e2e][sbatch]") {
  auto fit = runHvdrun({"sbatch", "--dry-run", "-np", "9", "--nodes", "2", "--ntasks-per-node", "4", "prog"});
  CHECK(fit.exitCode == 2);
  CHECK(fit.err.rfind("hvdrun: error: -np 9 does not fit 2 node(s) x 4 rank(s) per node\n", 0) == 0);
  auto time = runHvdrun({"sbatch", "--dry-run", "--time", "2h", "prog"});
  CHECK(time.exitCode == 2);
  CHECK(time.err.rfind("hvdrun: error: --time '2h': not a time sbatch takes", 0) == 0);
  auto signal = runHvdrun({"sbatch", "--dry-run", "--signal", "KILL@30", "prog"});
  CHECK(signal.exitCode == 2);
  CHECK(signal.err.rfind("hvdrun: error: --signal: 'KILL@30' is not a preemption signal hvdrun can forward\n", 0) == 0);
}

TEST_CASE("submitting without sbatch in PATH is an environment error, exit 3", "[e2e][sbatch]") {
  auto run = runHvdrun({"sbatch", "--submit", "prog"}, withEnv(environmentWith({"PATH=/nonexistent"})));
  CHECK(run.exitCode == 3);
  CHECK(run.err.rfind("hvdrun: error: --submit needs Slurm's sbatch, which is not in PATH\n", 0) == 0);
}
