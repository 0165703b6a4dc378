// tests/e2e/config_e2e_test.cc: config files and HVDRUN_* variables as a user meets them:
// which value wins, and the exact text for every kind of mistake.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::TempDir;
using hvd::test::withEnv;

namespace {

std::string writeFile(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The launch line's -np in the job script hvdrun sbatch prints, or "" when it has none.
std::string scriptNumProc(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> full{"sbatch", "--dry-run"};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {"--", "prog"});
  auto run = runHvdrun(full, withEnv(environmentWith(env)));
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  std::smatch m;
  return std::regex_search(run.out, m, std::regex("--num-proc(?:=| )(\\d+)")) ? m[1].str() : "";
}

}  // namespace

TEST_CASE("the command line beats HVDRUN_ variables, which beat the config file", "[e2e][config]") {
  TempDir dir;
  std::string config = writeFile(dir, "c.toml", "num-proc = 3\n");
  std::vector<std::string> noXdg{"XDG_CONFIG_HOME=" + dir.path() + "/none", "HVDRUN_NUM_PROC"};
  CHECK(scriptNumProc({"--config-file", config}, noXdg) == "3");
  std::vector<std::string> withVar{"XDG_CONFIG_HOME=" + dir.path() + "/none", "HVDRUN_NUM_PROC=2"};
  CHECK(scriptNumProc({"--config-file", config}, withVar) == "2");
  CHECK(scriptNumProc({"--config-file", config, "-np", "1"}, withVar) == "1");
  CHECK(scriptNumProc({"--config-file", config, "--no-config"}, withVar).empty());
}

TEST_CASE("the XDG default config file is read without being named, profile and all", "[e2e][config]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/hvdrun");
  writeFile(dir, "hvdrun/config.toml",
            "partition = \"debug\"\n[profile.alpha]\npartition = \"a100\"\naccount = \"proj-alpha\"\n"
            "gpus-per-node = 4\nmodules = [\"cuda/12.2\"]\n");
  auto run = runHvdrun({"sbatch", "--dry-run", "--profile", "alpha", "-np", "8", "--", "prog"},
                       withEnv(environmentWith({"XDG_CONFIG_HOME=" + dir.path()})));
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  for (const char* line : {"#SBATCH --partition=a100\n", "#SBATCH --account=proj-alpha\n", "#SBATCH --gpus-per-node=4\n",
                           "#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n", "module load cuda/12.2\n"}) {
    CHECK(run.out.find(line) != std::string::npos);
  }
  auto byVariable = runHvdrun({"sbatch", "--dry-run", "--", "prog"},
                              withEnv(environmentWith({"XDG_CONFIG_HOME=" + dir.path(), "HVDRUN_PROFILE=alpha"})));
  CHECK(byVariable.out.find("#SBATCH --partition=a100\n") != std::string::npos);
  auto plain = runHvdrun({"sbatch", "--dry-run", "--", "prog"}, withEnv(environmentWith({"XDG_CONFIG_HOME=" + dir.path()})));
  CHECK(plain.out.find("#SBATCH --partition=debug\n") != std::string::npos);
}

TEST_CASE("a misspelt config key stops hvdrun with file, line, column and a suggestion, exit 2", "[e2e][config]") {
  TempDir dir;
  std::string config = writeFile(dir, "c.toml", "time = \"1:00:00\"\npartiton = \"gpu\"\n");
  auto run = runHvdrun({"--config-file", config, "-np", "2", "true"});
  CHECK(run.exitCode == 2);
  CHECK(run.out.empty());
  CHECK(run.err == "hvdrun: error: " + config + ":2:1: unknown key 'partiton' (did you mean 'partition'?)\n"
                   "  hint: the keys are hvdrun's long option names (docs/config.md); profiles go in [profile.NAME]\n");
}

TEST_CASE("a config value of the wrong type names key and types, exit 2", "[e2e][config]") {
  TempDir dir;
  std::string config = writeFile(dir, "c.toml", "requeue = \"yes\"\n");
  auto run = runHvdrun({"--config-file", config, "-np", "2", "true"});
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: " + config + ":1:11: 'requeue' must be true or false, not a string\n");
}

TEST_CASE("a missing config file, a TOML syntax error and an unknown profile are usage errors", "[e2e][config]") {
  TempDir dir;
  auto missing = runHvdrun({"--config-file", dir.path() + "/nope.toml", "-np", "2", "true"});
  CHECK(missing.exitCode == 2);
  CHECK(missing.err.rfind("hvdrun: error: cannot read the config file: ", 0) == 0);
  std::string broken = writeFile(dir, "broken.toml", "num-proc = 2\npartition = \n");
  auto syntax = runHvdrun({"--config-file", broken, "true"});
  CHECK(syntax.exitCode == 2);
  CHECK(syntax.err.rfind("hvdrun: error: " + broken + ":2:", 0) == 0);
  std::string profiles = writeFile(dir, "p.toml", "[profile.alpha]\n[profile.beta]\n");
  auto unknown = runHvdrun({"--config-file", profiles, "--profile", "gamma", "-np", "1", "true"});
  CHECK(unknown.exitCode == 2);
  CHECK(unknown.err == "hvdrun: error: no profile 'gamma' in " + profiles + "\n  hint: its profiles: alpha, beta\n");
}

TEST_CASE("an HVDRUN_ variable naming no option is an error with the nearest name", "[e2e][config]") {
  auto run = runHvdrun({"-np", "1", "true"}, withEnv(environmentWith({"HVDRUN_NUM_PRC=3"})));
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: unknown setting variable HVDRUN_NUM_PRC (did you mean HVDRUN_NUM_PROC?)\n"
                   "  hint: HVDRUN_<OPTION> sets --<option> (docs/config.md); unset it or fix its name\n");
}

TEST_CASE("settings from a config file launch ranks like the same options typed", "[e2e][config]") {
  TempDir dir;
  std::string config = writeFile(dir, "c.toml", "num-proc = 3\nno-prefix = true\n");
  auto run = runHvdrun({"--config-file", config, "sh", "-c", "echo rank $HVD_RANK"});
  INFO(run.err);
  CHECK(run.exitCode == 0);
  for (int r = 0; r < 3; ++r) CHECK(run.out.find("rank " + std::to_string(r) + "\n") != std::string::npos);
  CHECK(run.out.find("<stdout>") == std::string::npos);
}

TEST_CASE("horovodrun's YAML config file sets the ranks' engine as it does under horovodrun and the command line wins",
          "[e2e][config]") {
  // Before, `hvdrun --config-file horovod.yaml` (horovodrun's format) was a TOML syntax error.
  TempDir dir;
  std::string config = writeFile(dir, "horovod.yaml",
                                 "controller: gloo\nparams:\n  fusion_threshold_mb: 32\n  cycle_time_ms: 10\n"
                                 "  hierarchical_allreduce: true\nstall_check:\n  enabled: false\n"
                                 "logging:\n  level: INFO\n");
  const std::string show =
      "echo F=$HOROVOD_FUSION_THRESHOLD C=$HOROVOD_CYCLE_TIME S=$HOROVOD_STALL_CHECK_DISABLE L=$HOROVOD_LOG_LEVEL";
  auto run = runHvdrun({"--config-file", config, "-np", "1", "sh", "-c", show},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out == "[0]<stdout>:F=33554432 C=10 S=1 L=info\n");
  CHECK(run.err.find("hvdrun: note: " + config + ": params.hierarchical_allreduce (horovodrun's) changes nothing "
                     "here, as on the command line") != std::string::npos);
  auto typed = runHvdrun({"--config-file", config, "--cycle-time-ms", "3", "-np", "1", "sh", "-c", show},
                         withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  CHECK(typed.out == "[0]<stdout>:F=33554432 C=3 S=1 L=info\n");
  // Its own mistakes are named by line; a profile is refused (the format has none).
  std::string bad = writeFile(dir, "bad.yaml", "params:\n  cycle_time: 1\n");
  auto refused = runHvdrun({"--config-file", bad, "-np", "1", "true"});
  CHECK(refused.exitCode == 2);
  CHECK(refused.err.find(bad + ":2: unknown key 'cycle_time' in params (did you mean 'cycle_time_ms'?)") !=
        std::string::npos);
  auto profiled = runHvdrun({"--config-file", config, "--profile", "a", "-np", "1", "true"});
  CHECK(profiled.exitCode == 2);
  CHECK(profiled.err.find("is horovodrun's YAML config, which has no profiles") != std::string::npos);
}

TEST_CASE("srun-args in a config file changes nothing for a job that starts without srun and says so", "[e2e][config]") {
  TempDir dir;
  std::string config = writeFile(dir, "hvdrun.toml", "srun-args = \"--gpu-bind=closest --export=ALL,X=1\"\n");
  auto run = runHvdrun({"--config-file", config, "-np", "1", "sh", "-c", "echo ran"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out == "[0]<stdout>:ran\n");
  CHECK(run.err.find("hvdrun: note: --srun-args changes nothing here: the ranks start without srun (the hosts come "
                     "from this machine)\n") != std::string::npos);
  auto refused = runHvdrun({"--config-file", config, "--srun-args", "--ntasks=2", "-np", "1", "true"},
                           withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  CHECK(refused.exitCode == 2);
  CHECK(refused.err.find("hvdrun: error: --srun-args: --ntasks is hvdrun's to set on the srun step\n") != std::string::npos);
}
