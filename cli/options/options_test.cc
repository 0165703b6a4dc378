// cli/options/options_test.cc: command-line parsing, without running anything.
#include "cli/options/options.h"

#include <catch2/catch.hpp>

#include "cli/user_error.h"
#include "runtime/common/closest_match.h"

using hvd::cli::ExitCode;
using hvd::cli::Options;
using hvd::cli::parseOptions;
using hvd::cli::SettingLayer;
using hvd::cli::takeSbatchOptionsInLaunch;
using hvd::cli::UserError;

namespace {

// The UserError a command line raises (as a launch reads it, with `launch`); fails the test
// when it parses.
UserError usageErrorOf(const std::vector<std::string>& args, bool launch = false) {
  try {
    Options o = parseOptions(args);
    if (launch) takeSbatchOptionsInLaunch(o);
  } catch (const UserError& e) {
    return e;
  }
  FAIL("expected a usage error");
  return UserError(ExitCode::kInternal, "");
}

}  // namespace

TEST_CASE("the program and its arguments after -np N are read as horovodrun reads them", "[unit]") {
  Options o = parseOptions({"-np", "4", "./train", "--epochs", "3", "-np", "9"});
  CHECK(o.numProc == 4);
  CHECK(o.program == std::vector<std::string>{"./train", "--epochs", "3", "-np", "9"});
}

TEST_CASE("the long forms --num-proc=N and --check-build work like -np and -cb", "[unit]") {
  CHECK(parseOptions({"--num-proc=3", "prog"}).numProc == 3);
  CHECK(parseOptions({"-cb"}).checkBuild);
  CHECK(parseOptions({"--check-build", "--verbose"}).verbose);
}

TEST_CASE("everything after -- is the program, even when it starts with a dash", "[unit]") {
  Options o = parseOptions({"-np", "2", "--", "-weird-program", "x"});
  CHECK(o.program == std::vector<std::string>{"-weird-program", "x"});
}

TEST_CASE("an unknown option is a usage error that suggests the closest option", "[unit]") {
  UserError e = usageErrorOf({"--chek-build"});
  CHECK(e.code() == ExitCode::kUsage);
  CHECK(std::string(e.what()) == "unknown option '--chek-build'");
  CHECK(e.hint() == "did you mean '--check-build'?");
}

TEST_CASE("an unknown option far from every known one gets the generic hint", "[unit]") {
  UserError e = usageErrorOf({"--zzzzzzzzzz", "prog"});
  CHECK(e.hint() == "run 'hvdrun --help' for the options");
}

TEST_CASE("a malformed or non-positive -np names the token", "[unit]") {
  CHECK(std::string(usageErrorOf({"-np", "four", "prog"}).what()) == "-np expects a whole number, got 'four'");
  CHECK(std::string(usageErrorOf({"-np", "0", "prog"}).what()) == "-np must be at least 1, got '0'");
  CHECK(std::string(usageErrorOf({"-np", "-3", "prog"}).what()) == "-np must be at least 1, got '-3'");
  // Past int's range is too many ranks, as -np 2000000 is (was "expects a whole number").
  CHECK(std::string(usageErrorOf({"-np", "99999999999", "p"}).what()) ==
        "-np 99999999999 is more ranks than hvdrun starts (at most 1048576)");
  CHECK(std::string(usageErrorOf({"-np", "-99999999999", "p"}).what()) == "-np must be at least 1, got '-99999999999'");
}

TEST_CASE("a -np without a value is a usage error", "[unit]") {
  UserError e = usageErrorOf({"-np"});
  CHECK(e.code() == ExitCode::kUsage);
  CHECK(std::string(e.what()).find("num-proc") != std::string::npos);
}

TEST_CASE("the kill grace takes seconds and rejects nonsense", "[unit]") {
  CHECK(parseOptions({"--kill-grace", "0.5", "-np", "1", "p"}).killGrace == std::chrono::milliseconds(500));
  CHECK(std::string(usageErrorOf({"--kill-grace", "soon", "p"}).what()) ==
        "--kill-grace expects seconds between 0 and 86400, got 'soon'");
  // NaN compares false with both bounds: 'nan' was taken, and its milliseconds were undefined.
  for (const char* bad : {"nan", "NAN", "-nan", "inf", "1e400"}) {
    INFO(bad);
    CHECK(std::string(usageErrorOf({"--kill-grace", bad, "p"}).what()) ==
          "--kill-grace expects seconds between 0 and 86400, got '" + std::string(bad) + "'");
    CHECK(std::string(usageErrorOf({"--start-timeout", bad, "p"}).what()).find("--start-timeout expects seconds") == 0);
  }
}

TEST_CASE("the line cap takes KiB from 1 to 1048576 and names a bad value", "[unit]") {
  CHECK(parseOptions({"-np", "1", "p"}).maxLineBytes == 1048576);
  CHECK(parseOptions({"--max-line-kb", "16", "-np", "1", "p"}).maxLineBytes == 16384);
  for (const char* bad : {"0", "1048577", "lots", "-1"}) {
    INFO(bad);
    UserError e = usageErrorOf({"--max-line-kb", bad, "p"});
    CHECK(e.code() == ExitCode::kUsage);
    CHECK(std::string(e.what()).find("--max-line-kb") == 0);
    CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("the help text is grouped and shows the -np spelling", "[unit]") {
  Options o = parseOptions({"--help"});
  CHECK(o.help);
  for (const char* needle : {"Launch:", "Output:", "Supervision:", "Information:", "-np, --num-proc", "-cb, --check-build",
                             "Exit codes:"}) {
    INFO(needle);
    CHECK(o.helpText.find(needle) != std::string::npos);
  }
}

TEST_CASE("edit distance counts insertions, deletions and substitutions", "[unit]") {
  CHECK(hvd::editDistance("", "") == 0);
  CHECK(hvd::editDistance("abc", "") == 3);
  CHECK(hvd::editDistance("kitten", "sitting") == 3);
  CHECK(hvd::editDistance("--verbos", "--verbose") == 1);
}

TEST_CASE("the ranks filter takes lists and ranges", "[unit]") {
  CHECK(parseOptions({"--ranks-filter", "0,3-5", "-np", "6", "p"}).ranksFilter == std::set<int>{0, 3, 4, 5});
  CHECK(std::string(usageErrorOf({"--ranks-filter", "5-3", "p"}).what()) == "--ranks-filter: '5-3' runs downwards or is too long");
  CHECK(std::string(usageErrorOf({"--ranks-filter", "a", "p"}).what()) ==
        "--ranks-filter expects a whole number from 0 to 16777216, got 'a'");
}

TEST_CASE("flags before -np do not swallow it", "[unit]") {
  Options o = parseOptions({"--mpi", "--no-prefix", "-np", "3", "--timestamp-output", "prog", "-np", "9"});
  CHECK(o.useMpi);
  CHECK(o.numProc == 3);
  CHECK(o.timestampOutput);
  CHECK(o.program == std::vector<std::string>{"prog", "-np", "9"});
  CHECK(parseOptions({"-H", "-weird-host:2", "-np", "2", "p"}).hosts == "-weird-host:2");  // a value may start with '-'
}

TEST_CASE("the command line beats the environment, which beats the config file", "[unit][config]") {
  hvd::cli::SettingLayer file{"config.toml", {{"num-proc", {"4"}}, {"partition", {"gpu"}}, {"gpus-per-rank", {"2"}}}};
  hvd::cli::SettingLayer env{"HVDRUN_* variables", {{"num-proc", {"6"}}}};
  Options fromLayers = parseOptions({"prog"}, {file, env});
  CHECK(fromLayers.numProc == 6);
  CHECK(fromLayers.gpusPerRank == 2);
  CHECK(fromLayers.sbatch.partition == "gpu");
  Options fromCli = parseOptions({"-np", "2", "--partition", "cpu", "prog"}, {file, env});
  CHECK(fromCli.numProc == 2);
  CHECK(fromCli.sbatch.partition == "cpu");
  CHECK(fromCli.givenOnCommandLine == std::set<std::string>{"num-proc", "partition"});
}

TEST_CASE("a list given on the command line replaces the config file's list instead of extending it", "[unit][config]") {
  hvd::cli::SettingLayer file{"config.toml", {{"modules", {"cuda/12", "nccl"}}}};
  CHECK(parseOptions({"prog"}, {file}).sbatch.modules == std::vector<std::string>{"cuda/12", "nccl"});
  CHECK(parseOptions({"--module", "gcc", "prog"}, {file}).sbatch.modules == std::vector<std::string>{"gcc"});
}

TEST_CASE("a repeatable option takes one value each time, so the program after it stays the program", "[unit]") {
  Options o = parseOptions({"--module", "a", "--module=b", "--env", "X=1 2", "./train", "--module", "c"});
  CHECK(o.sbatch.modules == std::vector<std::string>{"a", "b"});
  CHECK(o.sbatch.env == std::vector<std::string>{"X=1 2"});
  CHECK(o.program == std::vector<std::string>{"./train", "--module", "c"});
}

TEST_CASE("a flag a config file turns on is turned off again by --flag=false", "[unit][config]") {
  hvd::cli::SettingLayer file{"config.toml", {{"mpi", {"true"}}, {"no-gpu", {"true"}}}};
  Options o = parseOptions({"--mpi=false", "prog"}, {file});
  CHECK_FALSE(o.useMpi);
  CHECK(o.noGpu);
}

TEST_CASE("the launch arguments hold every source's run options but none of sbatch's or config's", "[unit][config]") {
  hvd::cli::SettingLayer file{"config.toml", {{"gpus-per-rank", {"2"}}, {"partition", {"gpu"}}, {"modules", {"m"}}}};
  Options o = parseOptions({"--config-file", "x.toml", "--dry-run", "-np", "8", "--time", "1:00:00", "--requeue", "prog"},
                           {file});
  CHECK(o.launchArgs == std::vector<std::string>{"--gpus-per-rank=2", "--num-proc", "8", "--requeue"});
}

TEST_CASE("hosts and printing settings from a config file never reach a job script's launch line", "[unit][config]") {
  hvd::cli::SettingLayer file{"config.toml", {{"hosts", {"laptop:4"}}, {"dry-run", {"true"}}, {"format", {"json"}}, {"mpi", {"true"}}}};
  Options o = parseOptions({"--dry-run", "prog"}, {file});
  CHECK(o.launchArgs == std::vector<std::string>{"--mpi=true"});
  CHECK(o.hosts == "laptop:4");  // still read: a plain launch on the laptop uses it
}

TEST_CASE("the preemption signal is USR1 or USR2 with the seconds before the time limit", "[unit]") {
  Options defaults = parseOptions({"prog"});
  CHECK(defaults.preemptSignal == "USR2");
  CHECK(defaults.preemptSeconds == 90);
  Options o = parseOptions({"--signal", "SIGUSR1@300", "prog"});
  CHECK(o.preemptSignal == "USR1");
  CHECK(o.preemptSeconds == 300);
  CHECK(parseOptions({"--signal=B:USR2", "prog"}).preemptSeconds == 90);
  UserError e = usageErrorOf({"--signal", "TERM@60", "prog"});
  CHECK(std::string(e.what()) == "--signal: 'TERM@60' is not a preemption signal hvdrun can forward");
  CHECK(std::string(usageErrorOf({"--signal", "USR2@soon", "prog"}).what()) ==
        "--signal expects a whole number from 0 to 65535, got 'soon'");
}

TEST_CASE("every option but help, version and the config's own has a settings key", "[unit][config]") {
  std::set<std::string> keys;
  for (const auto& k : hvd::cli::settingKeys()) keys.insert(k.key);
  for (const char* expected : {"num-proc", "hosts", "mpi", "partition", "modules", "sbatch-args", "requeue", "signal"}) {
    CHECK(keys.count(expected) == 1);
  }
  for (const char* excluded : {"help", "version", "config-file", "profile", "no-config"}) CHECK(keys.count(excluded) == 0);
}

TEST_CASE("hvdrun's log level option takes horovodrun's upper-case levels as the runtime reads them and refuses others",
          "[unit]") {
  // horovodrun's choices are TRACE ... FATAL: `--log-level INFO` was refused.
  for (auto [given, want] : std::vector<std::pair<std::string, std::string>>{
           {"INFO", "info"}, {"info", "info"}, {"Warning", "warning"}}) {
    Options o = parseOptions({"--log-level", given, "-np", "1", "prog"});
    CHECK(std::count(o.runtimeVariables.begin(), o.runtimeVariables.end(), "HOROVOD_LOG_LEVEL=" + want) == 1);
  }
  CHECK_THROWS_WITH(parseOptions({"--log-level", "LOUD", "-np", "1", "prog"}),
                    Catch::Contains("--log-level expects trace, debug, info, warning, error or fatal, got 'LOUD'"));
}

TEST_CASE("horovodrun's spellings --nics --prefix-output-with-timestamp --gloo and --gloo-timeout-seconds take hvdrun's "
          "meanings",
          "[unit]") {
  Options o = parseOptions({"--nics", "ib0", "--prefix-output-with-timestamp", "--gloo", "--gloo-timeout-seconds", "90",
                            "-np", "2", "prog"});
  CHECK(o.networkInterface == "ib0");
  CHECK(o.timestampOutput);
  CHECK_FALSE(o.useMpi);
  CHECK(std::count(o.runtimeVariables.begin(), o.runtimeVariables.end(), "HVD_TIMEOUT=90") == 1);
  CHECK(o.notes.empty());
  // Passed on to a job script's hvdrun, which reads them alike.
  const auto& args = o.launchArgs;
  CHECK(std::find(args.begin(), args.end(), "ib0") != args.end());
  CHECK(std::find(args.begin(), args.end(), "--prefix-output-with-timestamp") != args.end());
  CHECK(parseOptions(args).networkInterface == "ib0");
  CHECK(std::string(usageErrorOf({"--nics", "ib0,eth0", "prog"}).what()) ==
        "--network-interface (or --nics, --network-interfaces) 'ib0,eth0' names more than one interface");
  // horovodrun's plural spelling, and its switch-off of a torus allreduce hvd does not have.
  Options plural = parseOptions({"--network-interfaces", "ib0", "--no-torus-allreduce", "-np", "2", "prog"});
  CHECK(plural.networkInterface == "ib0");
  CHECK(plural.notes.empty());
  CHECK(plural.program == std::vector<std::string>{"prog"});
  CHECK(std::string(usageErrorOf({"--gloo-timeout-seconds", "0", "prog"}).what()) ==
        "--gloo-timeout-seconds expects a whole number from 1 to 86400, got '0'");
}

TEST_CASE("horovodrun's single-dash -hostfile reads the hostfile and -v alone prints the version as horovodrun -v does",
          "[unit]") {
  Options o = parseOptions({"-hostfile", "hosts.txt", "-np", "2", "prog"});
  CHECK(o.hostfile == "hosts.txt");
  CHECK(parseOptions({"-v"}).showVersion);
  // With anything else -v stays --verbose (hvdrun -cb -v).
  Options verbose = parseOptions({"-cb", "-v"});
  CHECK(verbose.verbose);
  CHECK_FALSE(verbose.showVersion);
}

TEST_CASE("torchrun's --nproc-per-node gpu cpu and auto are kept for the plan and refused beside -np", "[unit]") {
  for (auto [given, word] : std::vector<std::pair<std::string, std::string>>{
           {"gpu", "gpu"}, {"cpu", "cpu"}, {"auto", "auto"}, {"GPU", "gpu"}}) {
    Options o = parseOptions({"--nproc-per-node", given, "train.py"});
    CHECK(o.ranksPerHostWord == word);
    CHECK(o.ranksPerHost == 0);
    CHECK(o.noGpu == (word == "cpu"));  // a rank per CPU: GPUs left alone, as torchrun leaves them
  }
  UserError both = usageErrorOf({"-np", "2", "--nproc-per-node", "gpu", "train.py"});
  CHECK(std::string(both.what()) == "-np and --nproc-per-node both say how many ranks: give one of them");
  UserError bad = usageErrorOf({"--nproc-per-node", "gpus", "train.py"});
  CHECK(std::string(bad.what()) == "--nproc-per-node expects a whole number from 1 to 1048576, or gpu, cpu or auto "
                                   "(torchrun's), got 'gpus'");
}

TEST_CASE("torchrun's --nproc-per-node --nnodes and --standalone and mpirun's -n --np and --host take hvdrun's meanings",
          "[unit]") {
  Options torch = parseOptions({"--standalone", "--nnodes=1", "--nproc-per-node=4", "train.py"});
  CHECK(torch.ranksPerHost == 4);
  CHECK(torch.nnodes == 1);
  CHECK(torch.numProc == 0);
  CHECK(torch.program == std::vector<std::string>{"train.py"});
  CHECK(parseOptions({"--nproc_per_node", "2", "train.py"}).ranksPerHost == 2);
  CHECK(parseOptions({"-npernode", "3", "prog"}).ranksPerHost == 3);  // mpirun's
  CHECK(parseOptions({"--npernode", "3", "prog"}).ranksPerHost == 3);
  CHECK(parseOptions({"--nnodes", "2:2", "--nproc-per-node", "2", "train.py"}).nnodes == 2);
  CHECK(parseOptions({"-n", "3", "prog"}).numProc == 3);
  CHECK(parseOptions({"--np", "5", "prog"}).numProc == 5);
  CHECK(parseOptions({"--host", "a:2,b:2", "prog"}).hosts == "a:2,b:2");
  CHECK(std::string(usageErrorOf({"-np", "4", "--nproc-per-node", "2", "prog"}).what()) ==
        "-np and --nproc-per-node both say how many ranks: give one of them");
  CHECK(std::string(usageErrorOf({"--nnodes", "1:4", "--nproc-per-node", "2", "prog"}).what()) ==
        "--nnodes 1:4 asks for an elastic range of hosts, which hvdrun takes as --min-np and a discovery script");
  CHECK(std::string(usageErrorOf({"--nnodes", ":", "prog"}).what()) == "--nnodes expects N or N:N hosts, got ':'");
  // Passed on to a job script's hvdrun as given.
  Options again = parseOptions(torch.launchArgs);
  CHECK(again.ranksPerHost == 4);
}

TEST_CASE("torchrun's multi-node rendezvous flags and -m are refused saying what hvdrun does instead", "[unit]") {
  for (const char* flag : {"--rdzv-backend", "--rdzv_endpoint", "--master-addr", "--master_port", "--node-rank"}) {
    UserError e = usageErrorOf({"--nproc-per-node", "2", flag, "x", "train.py"});
    INFO(flag);
    CHECK(e.code() == ExitCode::kUsage);
    CHECK(std::string(e.what()).rfind(std::string(flag) + " is torchrun's multi-node rendezvous, which hvdrun does "
                                                          "not need: one hvdrun command starts the ranks of every host",
                                      0) == 0);
    CHECK(e.hint().find("run hvdrun once, not once per node") != std::string::npos);
  }
  UserError logs = usageErrorOf({"--nproc-per-node", "2", "--log-dir", "logs", "train.py"});
  CHECK(std::string(logs.what()) == "--log-dir is torchrun's way to keep each rank's output");
  CHECK(logs.hint().find("--output-filename DIR") != std::string::npos);  // was: "did you mean '--log-level'?"
  UserError module = usageErrorOf({"--nproc-per-node", "2", "-m", "pkg.train"});
  CHECK(module.hint() == "give the interpreter: hvdrun [options] python -m MODULE [args]");
  // Accepted: --no-python (hvdrun runs the program as given) and --max_restarts.
  Options o = parseOptions({"--no-python", "--max_restarts", "2", "-np", "2", "prog"});
  CHECK(o.maxRestarts == 2);
  CHECK(o.notes.empty());
}

TEST_CASE("torchrun's remaining flags run with a note or are refused with the rest of their family", "[unit]") {
  // They were unknown options: --monitor-interval and --role ask for nothing hvdrun lacks.
  Options o = parseOptions({"--monitor-interval", "5", "--role", "trainer", "--nproc-per-node", "2", "train.py"});
  REQUIRE(o.notes.size() == 2);
  CHECK(o.notes[0] == "--monitor-interval (torchrun's) changes nothing here: hvdrun hears of each rank's end at once, "
                      "without polling");
  CHECK(o.notes[1] == "--role (torchrun's) changes nothing here: every rank is a worker (TF_CONFIG's roles: "
                      "--tf-config)");
  for (const char* flag : {"--local-addr", "--local_addr"}) {
    UserError e = usageErrorOf({flag, "10.0.0.1", "--nproc-per-node", "2", "train.py"});
    CHECK(std::string(e.what()).rfind(std::string(flag) + " is torchrun's multi-node rendezvous", 0) == 0);
  }
  for (const char* flag : {"--local-ranks-filter", "--local_ranks_filter", "--logs-specs"}) {
    UserError e = usageErrorOf({flag, "0", "--nproc-per-node", "2", "train.py"});
    CHECK(std::string(e.what()) == std::string(flag) + " is torchrun's way to keep each rank's output");
    CHECK(e.hint().find("--ranks-filter") != std::string::npos);
  }
  UserError run = usageErrorOf({"--run-path", "--nproc-per-node", "2", "/abs/train.py"});
  CHECK(std::string(run.what()) == "--run-path is torchrun's: run the script in its own interpreter");
  CHECK(run.hint() == "give the interpreter: hvdrun [options] python SCRIPT [args]");
}

TEST_CASE("mpirun's --allow-run-as-root is taken and its map, binding report, MCA and working-directory flags are "
          "refused saying what does that here",
          "[unit]") {
  // `mpirun --allow-run-as-root -np 4 python train.py` in a container, launcher renamed: it
  // was an unknown option. hvdrun runs as root, and passes the flag on to mpirun under --mpi.
  Options root = parseOptions({"--allow-run-as-root", "-np", "2", "prog"});
  CHECK(root.program == std::vector<std::string>{"prog"});
  CHECK(root.notes.empty());
  struct Refused {
    std::vector<std::string> args;
    std::string what, hint;
  };
  for (const Refused& r : std::vector<Refused>{
           {{"--mca", "btl", "tcp,self"}, "--mca is mpirun's MCA parameter", "--mpi-args '--mca NAME VALUE'"},
           {{"-mca", "btl", "tcp,self"}, "-mca is mpirun's MCA parameter", "--mpi-args '--mca NAME VALUE'"},
           {{"--display-map"}, "--display-map is mpirun's report of where ranks run", "--dry-run"},
           {{"--report-bindings"}, "--report-bindings is mpirun's report of where ranks run", "--dry-run"},
           {{"-wdir", "/tmp"}, "-wdir is mpirun's working directory for the ranks", "cd DIR"},
           {{"--wdir", "/tmp"}, "--wdir is mpirun's working directory for the ranks", "cd DIR"},
       }) {
    std::vector<std::string> args = r.args;
    args.insert(args.end(), {"-np", "2", "prog"});
    UserError e = usageErrorOf(args);
    INFO(r.what);
    CHECK(e.code() == ExitCode::kUsage);
    CHECK(std::string(e.what()).rfind(r.what, 0) == 0);
    CHECK(e.hint().find(r.hint) != std::string::npos);
  }
}

TEST_CASE("srun's and mpich's spellings take hvdrun's meanings and the ones without one are refused saying why",
          "[unit]") {
  CHECK(parseOptions({"--ntasks", "3", "prog"}).numProc == 3);              // srun's
  CHECK(parseOptions({"--gpus-per-task", "2", "prog"}).gpusPerRank == 2);   // srun's
  CHECK(parseOptions({"-ppn", "2", "prog"}).ranksPerHost == 2);             // was "--ssh-port ... got 'pn'"
  CHECK(parseOptions({"--ppn", "2", "prog"}).ranksPerHost == 2);
  Options tagged = parseOptions({"--tag-output", "-np", "2", "prog"});      // mpirun's: hvdrun tags anyway
  CHECK(tagged.notes.empty());
  CHECK(tagged.program == std::vector<std::string>{"prog"});
  // Each was answered with a wrong suggestion ('-H', '--cpus-per-task') or none.
  const std::pair<const char*, const char*> refused[] = {
      {"-N", "hvdrun sbatch -N N --submit"}, {"-c", "--bind-to core"}, {"--export", "-x NAME=VALUE"},
      {"--map-by", "--nproc-per-node K"}, {"--oversubscribe", "more slots"}};
  for (const auto& [flag, hint] : refused) {
    INFO(flag);
    std::vector<std::string> args = {flag};
    if (std::string(flag) != "--oversubscribe") args.push_back("2");
    args.insert(args.end(), {"-np", "2", "prog"});
    UserError e = usageErrorOf(args);
    CHECK(e.code() == ExitCode::kUsage);
    CHECK(std::string(e.what()).rfind(std::string(flag) + " is ", 0) == 0);
    CHECK(e.hint().find(hint) != std::string::npos);
  }
}

TEST_CASE("horovodrun's older --ccl-bgt-affinity runs with the note its newer name --thread-affinity gets", "[unit]") {
  // Renamed in Horovod 0.21; scripts from before still pass it (and its YAML key is read too).
  Options o = parseOptions({"--ccl-bgt-affinity", "1", "-np", "2", "prog"});
  CHECK(o.program == std::vector<std::string>{"prog"});
  REQUIRE(o.notes.size() == 1);
  CHECK(o.notes[0] == "--ccl-bgt-affinity (horovodrun's) changes nothing here: pin ranks with --bind-to "
                      "(horovodrun's older name for --thread-affinity)");
}

TEST_CASE("horovodrun's tuning flags without a counterpart run with a note each and go no further", "[unit]") {
  Options o = parseOptions({"--autotune", "--autotune-log-file", "trials.csv", "--hierarchical-allreduce",
                            "--num-nccl-streams", "2", "--disable-cache", "--no-hierarchical-allgather", "-np", "2",
                            "prog", "--autotune"});
  CHECK(o.program == std::vector<std::string>{"prog", "--autotune"});
  REQUIRE(o.notes.size() == 4);  // --disable-cache and the --no-... flags ask for what hvdrun does
  CHECK(o.notes[0] == "--hierarchical-allreduce (horovodrun's) changes nothing here: hvd's ring already runs over "
                      "shared memory within a host and TCP between hosts, and NCCL picks its own topology");
  CHECK(o.notes[1] == "--autotune (horovodrun's) changes nothing here: hvdrun has no autotuner: set "
                      "--fusion-threshold-mb and --cycle-time-ms");
  for (const std::string& arg : o.launchArgs) CHECK(arg.find("autotune") == std::string::npos);
  CHECK(std::find(o.launchArgs.begin(), o.launchArgs.end(), "--disable-cache") == o.launchArgs.end());
  // Not settings a config file may hold.
  for (const auto& key : hvd::cli::settingKeys()) CHECK(key.key.find("autotune") == std::string::npos);
}

TEST_CASE("horovodrun's elastic flags hvdrun has no counterpart for and jsrun are refused saying what they are", "[unit]") {
  for (const char* flag : {"--cooldown-range"}) {
    UserError e = usageErrorOf({flag, "2", "-np", "2", "prog"});
    CHECK(e.code() == ExitCode::kUsage);
    CHECK(std::string(e.what()) == std::string(flag) +
                                       " is horovodrun's elastic training's, which hvdrun does not have: its elastic "
                                       "jobs (--min-np) start -np ranks, go on without the ones that fail, and grow "
                                       "as --host-discovery-script allows, at once");
    CHECK(e.hint().find("--requeue") != std::string::npos);
    CHECK(e.hint().find("--max-restarts N starts every rank again after a failure") != std::string::npos);
  }
  CHECK(std::string(usageErrorOf({"--jsrun", "-np", "2", "prog"}).what()) ==
        "--jsrun is horovodrun's IBM LSF launcher, which hvdrun does not have");
}

TEST_CASE("the elastic settings are read and refused out of range naming the option", "[unit]") {
  Options o = parseOptions({"-np", "4", "--min-np", "2", "--reset-limit", "3", "prog"});
  CHECK(o.minNp == 2);
  CHECK(o.resetLimit == 3);
  Options plain = parseOptions({"-np", "4", "prog"});
  CHECK(plain.minNp == 0);
  CHECK(plain.resetLimit == -1);
  CHECK(std::string(usageErrorOf({"-np", "4", "--min-np", "0", "prog"}).what()).find("--min-np") == 0);
  CHECK(std::string(usageErrorOf({"-np", "4", "--reset-limit", "x", "prog"}).what()).find("--reset-limit") == 0);
  Options growing = parseOptions({"-np", "2", "--max-np", "4", "--host-discovery-script", "./d.sh", "--slots-per-host",
                                  "2", "prog"});
  CHECK(growing.maxNp == 4);
  CHECK(growing.hostDiscoveryScript == "./d.sh");
  CHECK(growing.slotsPerHost == 2);
  // horovodrun's two values; the program's words are not taken as more.
  Options cooling = parseOptions({"--blacklist-cooldown-range", "15", "30", "--elastic-timeout", "60", "-np", "2",
                                  "prog", "7"});
  CHECK(cooling.cooldownMin == 15);
  CHECK(cooling.cooldownMax == 30);
  CHECK(cooling.elasticTimeout == 60);
  CHECK(cooling.program == std::vector<std::string>{"prog", "7"});
  CHECK(parseOptions({"-np", "2", "--blacklist-cooldown-range", "5", "5", "prog"}).program ==
        std::vector<std::string>{"prog"});
  CHECK(std::string(usageErrorOf({"-np", "2", "--blacklist-cooldown-range", "30", "15", "prog"}).what())
            .find("--blacklist-cooldown-range") == 0);
  CHECK(plain.maxNp == 0);
  CHECK(plain.slotsPerHost == 1);
  CHECK(std::string(usageErrorOf({"-np", "4", "--slots-per-host", "0", "prog"}).what()).find("--slots-per-host") == 0);
}

TEST_CASE("horovodrun's --mpi-args is split at spaces and needs --mpi, and --gloo with --mpi is refused", "[unit]") {
  Options o = parseOptions({"--mpi", "--mpi-args", "-x A=1  --mca btl self,tcp", "-np", "2", "prog"});
  CHECK(o.mpiArgs == std::vector<std::string>{"-x", "A=1", "--mca", "btl", "self,tcp"});
  CHECK(std::string(usageErrorOf({"--mpi-args=-v", "-np", "2", "prog"}).what()) ==
        "--mpi-args '-v' is for mpirun, which runs only with --mpi");
  CHECK(std::string(usageErrorOf({"--gloo", "--mpi", "-np", "2", "prog"}).what()) == "--gloo and --mpi ask for two launches");
}

TEST_CASE("an option given an empty value is refused naming it instead of taking the next option as its value",
          "[unit]") {
  // "--timeline-filename=$UNSET -np 2 ./train": CLI11 took -np as the file name, and the
  // error said -np was missing.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--timeline-filename=", "-np", "2", "prog"},
        std::vector<std::string>{"--timeline-filename", "", "-np", "2", "prog"}}) {
    UserError e = usageErrorOf(args);
    CHECK(std::string(e.what()) == "--timeline-filename was given an empty value");
    CHECK(e.hint().find("=$UNSET") != std::string::npos);
  }
  CHECK(std::string(usageErrorOf({"-np", "2", "-x", "", "prog"}).what()) == "-x was given an empty value");
  // A flag given "=" is no value to miss; an empty argument of the program is the program's.
  CHECK(parseOptions({"--no-gpu=", "-np", "2", "prog", ""}).program == std::vector<std::string>{"prog", ""});
  hvd::cli::SettingLayer layer{"config.toml", {{"timeline-filename", {""}}}};
  try {
    parseOptions({"-np", "2", "prog"}, {layer});
    FAIL("an empty config value was taken");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "config.toml: 'timeline-filename' is empty");
  }
}

TEST_CASE("srun's ntasks-per-node in a launch puts that many ranks on every host as nproc-per-node does", "[unit]") {
  // Before, a launch ignored it: hvdrun --ntasks-per-node 1 -np 2 put both ranks on one node.
  Options o = parseOptions({"--ntasks-per-node", "2", "prog"});
  takeSbatchOptionsInLaunch(o);
  CHECK(o.ranksPerHost == 2);
  CHECK(std::string(usageErrorOf({"--ntasks-per-node", "2", "-np", "4", "prog"}, true).what()) ==
        "-np and --ntasks-per-node both say how many ranks: give one of them");
  CHECK(std::string(usageErrorOf({"--ntasks-per-node", "2", "--nproc-per-node", "3", "prog"}, true).what()) ==
        "--ntasks-per-node and --nproc-per-node both say how many ranks each host gets: give one of them");
}

TEST_CASE("an allocation's options given to a launch are refused naming hvdrun sbatch", "[unit]") {
  UserError partition = usageErrorOf({"--partition", "gpu", "-np", "2", "prog"}, true);
  CHECK(partition.code() == ExitCode::kUsage);
  CHECK(std::string(partition.what()) ==
        "--partition is for hvdrun sbatch: it shapes the allocation a job script asks Slurm for, and a launch asks "
        "for none (it runs on this machine, the -H or --hostfile hosts, or the Slurm allocation it is in)");
  CHECK(partition.hint() == "to submit a job: hvdrun sbatch --submit --partition ... -np N program; to run here, leave "
                            "it out");
  UserError nodes = usageErrorOf({"--nodes", "2", "-np", "2", "prog"}, true);
  CHECK(std::string(nodes.what()).rfind("--nodes is for hvdrun sbatch", 0) == 0);
  CHECK(nodes.hint().find("--nnodes N checks how many hosts a launch has") != std::string::npos);
  // From a config file or HVDRUN_ variables they stay quiet: a profile serves hvdrun sbatch too.
  Options fromProfile = parseOptions({"-np", "2", "prog"}, {SettingLayer{"config.toml", {{"partition", {"gpu"}}}}});
  CHECK_NOTHROW(takeSbatchOptionsInLaunch(fromProfile));
}
