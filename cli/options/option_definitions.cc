// cli/options/option_definitions.cc: CLI11 set-up. horovodrun's single-dash long options
// (-np, -cb) are rewritten to their long forms first (options.cc), because CLI11 reads "-np"
// as "-n -p".
#include "cli/options/option_definitions.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "cli/options/foreign_flags.h"
#include "cli/options/option_values.h"
#include "cli/user_error.h"
#include "runtime/common/closest_match.h"
#include "runtime/common/log.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

using rank_contract::assignment;

// horovodrun's single-dash spellings, then mpirun's, srun's and torchrun's (their meanings
// here are theirs: all ranks, the hosts, ranks per host). Only the first of an option's
// spellings shows in --help's option column.
constexpr Alias kAliases[] = {{"-np", "--num-proc"},   {"-cb", "--check-build"}, {"-hostfile", "--hostfile"},
                              {"-n", "--num-proc"},    {"--np", "--num-proc"},   {"--host", "--hosts"},
                              {"--nproc_per_node", "--nproc-per-node"}, {"-npernode", "--nproc-per-node"},
                              {"--npernode", "--nproc-per-node"}, {"--max_restarts", "--max-restarts"},
                              // srun's, then MPICH's and Intel MPI's (-ppn read as -p pn: "--ssh-port ... 'pn'").
                              {"--ntasks", "--num-proc"}, {"--gpus-per-task", "--gpus-per-rank"},
                              {"-ppn", "--nproc-per-node"}, {"--ppn", "--nproc-per-node"}};

// Options only `hvdrun sbatch` reads, and the ones about where settings come from: neither
// is passed on to the hvdrun inside a job script.
const std::set<std::string> kSbatchOnlyKeys = {
    "submit", "template", "job-name", "partition", "account", "qos", "time", "constraint", "mem",
    "job-output", "job-error", "nodes", "ntasks-per-node", "gpus-per-node", "cpus-per-task",
    "sbatch-args", "modules", "env", "venv", "setup"};
const std::set<std::string> kNotSettings = [] {
  // --blacklist-cooldown-range takes two values, which a config file's one value per key
  // cannot hold; elastic jobs that discover hosts do not run from job scripts either.
  std::set<std::string> keys = {"help", "version", "config-file", "profile", "no-config", "blacklist-cooldown-range"};
  // horovodrun's flags that change nothing are for command lines only: no config key, and
  // not passed on (a job script's hvdrun would note them again).
  for (const HorovodrunFlag& f : ignoredForeignFlags()) keys.insert(std::string(f.name).substr(2));
  for (const char* name : defaultForeignFlags()) keys.insert(std::string(name).substr(2));
  return keys;
}();
// Settings that never go on a job script's launch line: what to print instead of running,
// and where hosts come from (inside the job hvdrun reads the allocation).
const std::set<std::string> kNotForJobs = {"dry-run", "check-build", "verbose", "format", "rank",
                                           "hosts", "hostfile", "no-slurm"};

}  // namespace

const char* const kDescription =
    "hvdrun: start and supervise the ranks of a distributed training job.\n"
    "Usage: hvdrun [options] [--] program [args...]\n"
    "       hvdrun plan [options] [program [args...]]   (same as --dry-run)\n"
    "       hvdrun sbatch (--dry-run|--submit) [options] [--] program [args...]\n"
    "       hvdrun --check-build [--verbose]\n"
    "       hvdrun hostlist [--expand|--compress|--sorted|--count] [EXPRESSION...]\n"
    "       hvdrun timeline (merge -o OUT TRACE...|summary TRACE)";

std::span<const Alias> optionAliases() { return kAliases; }
const std::set<std::string>& sbatchOnlyKeys() { return kSbatchOnlyKeys; }
const std::set<std::string>& notSettingKeys() { return kNotSettings; }
const std::set<std::string>& notForJobKeys() { return kNotForJobs; }

// The engine options as the variables the ranks' runtime reads (runtime/common/env_registry.cc),
// checked here so that a typo fails before any rank starts.
std::vector<std::string> runtimeVariables(const RawValues& raw) {
  std::vector<std::string> vars;
  if (!raw.fusionThresholdMb.empty()) {
    long long mb = parseIntIn("--fusion-threshold-mb", raw.fusionThresholdMb, 0, 1 << 20);
    vars.push_back(assignment(rank_contract::kFusionThreshold, std::to_string(mb * 1024 * 1024)));
  }
  if (!raw.cycleTimeMs.empty()) {
    double ms = -1;
    const std::string& t = raw.cycleTimeMs;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
    if (ec != std::errc() || end != t.data() + t.size() || !(ms > 0) || ms > 10000) {
      throw UserError(ExitCode::kUsage, "--cycle-time-ms expects milliseconds above 0, at most 10000, got '" + t + "'",
                      kUsageHint);
    }
    vars.push_back(assignment(rank_contract::kCycleTime, t));
  }
  if (!raw.cacheCapacity.empty()) {
    vars.push_back(assignment(rank_contract::kCacheCapacity, std::to_string(parseIntIn("--cache-capacity", raw.cacheCapacity, 0, 1 << 16))));
  }
  if (raw.noStallCheck) vars.push_back(assignment(rank_contract::kStallCheckDisable, "1"));
  if (!raw.stallWarning.empty()) {
    vars.push_back(assignment(rank_contract::kStallCheckTime, std::to_string(parseIntIn("--stall-check-warning-time-seconds", raw.stallWarning, 1, 604800))));
  }
  if (!raw.stallShutdown.empty()) {
    vars.push_back(assignment(rank_contract::kStallShutdownTime, std::to_string(parseIntIn("--stall-check-shutdown-time-seconds", raw.stallShutdown, 0, 604800))));
  }
  if (!raw.timelineFilename.empty()) {
    // Absolute, so ranks that start elsewhere (srun, another working directory) agree.
    std::error_code ec;
    auto absolute = std::filesystem::absolute(raw.timelineFilename, ec);
    vars.push_back(assignment(rank_contract::kTimeline, (ec ? raw.timelineFilename : absolute.lexically_normal().string())));
  }
  if (raw.timelineMarkCycles) vars.push_back(assignment(rank_contract::kTimelineMarkCycles, "1"));
  if (!raw.timelineMaxMb.empty()) {
    vars.push_back(assignment(rank_contract::kTimelineMaxMb, std::to_string(parseIntIn("--timeline-max-mb", raw.timelineMaxMb, 1, 1 << 20))));
  }
  if (!raw.glooTimeout.empty()) {
    // Gloo's timeout in horovodrun: how long a rank waits for its peers to connect and in
    // an operation, as HVD_TIMEOUT is for hvd's ring.
    vars.push_back(assignment(rank_contract::kTimeout, std::to_string(parseIntIn("--gloo-timeout-seconds", raw.glooTimeout, 1, 86400))));
  }
  if (!raw.logLevel.empty()) {
    // Read as the ranks' runtime reads it, in any case (horovodrun's choices are upper case).
    auto level = parseLogLevel(raw.logLevel);
    if (!level) {
      throw UserError(ExitCode::kUsage, "--log-level expects trace, debug, info, warning, error or fatal, got '" +
                                            raw.logLevel + "'",
                      kUsageHint);
    }
    vars.push_back(assignment(rank_contract::kLogLevel, std::string(logLevelName(*level))));
  }
  return vars;
}

void defineOptions(CLI::App& app, Options& o, RawValues& raw) {
  app.footer("Exit codes: 0 ok, 1 internal error, 2 usage or config error, 3 environment error,\n"
             "124 timeout, 130 interrupted; otherwise the first failing rank's exit code\n"
             "(128+signal when it was killed). The manual: docs/hvdrun.md.");
  app.set_help_flag();  // handled below, so --help can be grouped with the other info options
  app.prefix_command();
  // A later value replaces an earlier one, so `--flag=false` can undo a config's `true`.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto list = [](CLI::Option* opt) { return opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); };

  app.add_option("--num-proc", raw.numProc,
                 "Number of ranks to start (horovodrun's -np; mpirun's and srun's -n, --np); default: every slot")
      ->group("Launch")->type_name("N");
  app.add_option("--nproc-per-node", raw.nprocPerNode,
                 "torchrun's (mpirun's -npernode): K ranks on every host (this machine, each -H host, each Slurm "
                 "node), instead of -np; K may be gpu (a rank per GPU), cpu (per CPU) or auto")
      ->group("Launch")->type_name("K");
  app.add_option("--nnodes", raw.nnodes, "torchrun's: the number of hosts the job must have (N or N:N)")
      ->group("Launch")->type_name("N");
  app.add_flag("--mpi", o.useMpi, "Launch through Open MPI's mpirun (inside or outside Slurm)")->group("Launch");
  app.add_flag("--pmix", o.pmix, "Under srun, start MPI programs with PMIx (srun --mpi=pmix)")->group("Launch");
  app.add_flag("--gloo", raw.gloo, "horovodrun's: start ranks without MPI (the default; hvd's ring stands for Gloo)")
      ->group("Launch");
  app.add_option("--mpi-args", raw.mpiArgs, "With --mpi: more of mpirun's options, split at spaces (horovodrun's)")
      ->group("Launch")
      ->type_name("ARGS");
  app.add_option("--srun-args", raw.srunArgs,
                 "Inside a Slurm allocation: more of srun's options for the step (containers, --gpu-bind, "
                 "--export, ...), split at spaces")
      ->group("Launch")
      ->type_name("ARGS");
  app.add_option("-H,--hosts", o.hosts, "Hosts and slots: host:slots,... (hostlists allowed: node[01-04]:4)")
      ->group("Hosts and GPUs")->type_name("LIST");
  app.add_option("--hostfile", o.hostfile, "File of 'host slots=N' or 'host:N' lines")
      ->group("Hosts and GPUs")->type_name("FILE");
  app.add_flag("--no-slurm", o.noSlurm, "Ignore the Slurm allocation (read automatically when SLURM_JOB_ID is set)")
      ->group("Hosts and GPUs");
  app.add_option("--gpus-per-rank", raw.gpusPerRank, "GPUs each rank gets in CUDA_VISIBLE_DEVICES (default 1)")
      ->group("Hosts and GPUs")->type_name("K");
  app.add_flag("--no-gpu", o.noGpu, "Do not set CUDA_VISIBLE_DEVICES")->group("Hosts and GPUs");
  app.add_flag("--oversubscribe-gpus", o.oversubscribeGpus, "Let ranks share GPUs when a host has too few")
      ->group("Hosts and GPUs");
  app.add_option("--bind-to", raw.bindTo,
                 "Pin each rank on a host to CPUs: none (default), core (its own block of cores; at most one rank "
                 "per core), core:overload-allowed (as core, or cores round robin when ranks outnumber them), socket "
                 "(sockets round robin). srun and mpirun launches pass it to them")
      ->group("Hosts and GPUs")->type_name("none|core|core:overload-allowed|socket");
  app.add_option("--network-interface,--nics,--network-interfaces", o.networkInterface,
                 "Interface for traffic between ranks (e.g. ib0)")
      ->group("Hosts and GPUs")->type_name("NAME");
  const char* ssh = "Hosts outside Slurm (ssh)";
  app.add_option("-p,--ssh-port", raw.sshPort, "Port of sshd on the other hosts (default: ssh's own, usually 22)")
      ->group(ssh)->type_name("PORT");
  app.add_option("-i,--ssh-identity-file", o.sshIdentityFile, "Private key ssh logs in with (default: ssh's own)")
      ->group(ssh)->type_name("FILE");
  app.add_option("--ssh-command", o.sshCommand,
                 "The ssh client and options of its own, split at spaces (default: ssh), e.g. 'ssh -F conf'")
      ->group(ssh)->type_name("CMD");
  app.add_option("--remote-hvdrun", o.remoteHvdrun, "hvdrun's path on the other hosts (default: this one's path)")
      ->group(ssh)->type_name("PATH");
  app.add_flag("--tf-config", o.tfConfig, "Give every rank a TF_CONFIG (MultiWorkerMirroredStrategy by default)")
      ->group("TensorFlow");
  app.add_option("--tf-ps", raw.tfPs, "Parameter servers for ParameterServerStrategy")->group("TensorFlow")->type_name("N");
  app.add_flag("--tf-chief", o.tfChief, "Rank 0 is a separate chief")->group("TensorFlow");
  app.add_flag("--tf-evaluator", o.tfEvaluator, "The last rank is an evaluator, outside the cluster")
      ->group("TensorFlow");
  app.add_option("--tf-port-base", raw.tfPortBase, "TF_CONFIG ports are base + local rank (default: ports free on this machine; across nodes, derived from the job)")
      ->group("TensorFlow")->type_name("PORT");
  app.add_flag("--dry-run", o.dryRun, "Print the plan (or with sbatch, the job script) instead of running it")
      ->group("Plan");
  app.add_option("--format", o.format, "table, json, sh, hostfile, tf_config or mpi (default table)")
      ->group("Plan")->type_name("FORMAT");
  app.add_option("--rank", raw.rank, "The rank --format sh and tf_config print")->group("Plan")->type_name("R");
  app.add_flag("--no-prefix", raw.noPrefix, "Print ranks' output without the [rank]<stdout>: prefix")
      ->group("Output");
  app.add_option("--output-filename", o.outputDir, "Also write DIR/rank.N/stdout and stderr for every rank")
      ->group("Output")->type_name("DIR");
  app.add_option("--ranks-filter", raw.ranksFilter, "Show only these ranks on the console, e.g. 0,3-5 (files get all)")
      ->group("Output")->type_name("LIST");
  app.add_flag("--timestamp-output,--prefix-output-with-timestamp", o.timestampOutput,
               "Start every console line with the time")
      ->group("Output");
  app.add_option("--max-line-kb", raw.maxLineKb,
                 "Cut a rank's output line longer than this many KiB into lines of that size (default 1024)")
      ->group("Output")->type_name("KB");
  // One word per -x, as mpirun takes it: the words after it are the program's.
  list(app.add_option("-x", raw.exports,
                      "Set NAME=VALUE in every rank's environment, or pass on hvdrun's NAME (mpirun's -x; repeatable)"))
      ->group("Launch")->type_name("NAME[=VALUE]")->allow_extra_args(false);
  app.add_option("--stdin", raw.stdinTarget,
                 "The rank that reads hvdrun's stdin, or none (default 0; the others read an empty one)")
      ->group("Output")->type_name("RANK");
  app.add_option("--start-timeout", raw.startTimeout,
                 "Seconds for every rank to reach the runtime's rendezvous once one has (default 30; 0: off)")
      ->group("Supervision")->type_name("SECONDS");
  app.add_option("--kill-grace", raw.killGrace,
                 "Seconds between SIGTERM and SIGKILL when stopping ranks (default 5)")
      ->group("Supervision")->type_name("SECONDS");
  app.add_option("--max-restarts", raw.maxRestarts,
                 "When a rank fails, stop the others and start every rank again, up to N times (torchrun's; "
                 "default 0: the job ends)")
      ->group("Supervision")->type_name("N");
  app.add_option("--min-np", raw.minNp,
                 "Elastic training (horovodrun's): when a rank fails, the others go on as a smaller world while at "
                 "least N ranks are left (ranks hvdrun forks on this machine; hvd.elastic.run re-forms them)")
      ->group("Supervision")->type_name("N");
  app.add_option("--max-np", raw.maxNp, "Elastic training: never run more than N ranks at once (default: no limit)")
      ->group("Supervision")->type_name("N");
  app.add_option("--host-discovery-script", o.hostDiscoveryScript,
                 "Elastic training: a program printing the hosts the job may use now, one host:slots a line; run "
                 "every second, and the job grows to their slots (this machine's; up to --max-np)")
      ->group("Supervision")->type_name("PATH");
  app.add_option("--slots-per-host", raw.slotsPerHost,
                 "Elastic training: slots of a host the discovery script prints without ':slots' (default 1)")
      ->group("Supervision")->type_name("N");
  app.add_option("--reset-limit", raw.resetLimit,
                 "Elastic training: end the job once its world has changed N times (default: no limit)")
      ->group("Supervision")->type_name("N");
  app.add_option("--blacklist-cooldown-range", raw.cooldownRange,
                 "Elastic training: a host where a rank failed gets no new ranks for a random MIN-MAX seconds "
                 "(default: for the rest of the job)")
      ->expected(2)
      ->allow_extra_args(false)  // a vector's default: CLI11 would take the program's words too
      ->group("Supervision")
      ->type_name("SECONDS");
  app.add_option("--elastic-timeout", raw.elasticTimeout,
                 "Elastic training: seconds a rank waits in init() for the other ranks of its world (default 600)")
      ->group("Supervision")->type_name("SECONDS");
  const char* engine = "Runtime engine (the ranks' HOROVOD_* variables)";
  app.add_option("--fusion-threshold-mb", raw.fusionThresholdMb,
                 "Pack ready allreduces into one collective up to this many MiB (default 128; 0: off)")
      ->group(engine)->type_name("MB");
  app.add_option("--cycle-time-ms", raw.cycleTimeMs, "Milliseconds between negotiation cycles (default 1)")
      ->group(engine)->type_name("MS");
  app.add_option("--cache-capacity", raw.cacheCapacity, "Named requests whose negotiation is cached (default 1024; 0: off)")
      ->group(engine)->type_name("N");
  app.add_flag("--no-stall-check", raw.noStallCheck, "Do not look for collectives some ranks never submit")->group(engine);
  app.add_option("--stall-check-warning-time-seconds", raw.stallWarning,
                 "Warn about collectives waiting this long for some ranks (default 60)")
      ->group(engine)->type_name("SECONDS");
  app.add_option("--stall-check-shutdown-time-seconds", raw.stallShutdown,
                 "End the job (exit code 119) once a collective waited this long for some ranks (default 0: never)")
      ->group(engine)->type_name("SECONDS");
  app.add_option("--timeline-filename", raw.timelineFilename,
                 "Record a Chrome trace of every collective on every rank, merged into FILE at exit")
      ->group(engine)->type_name("FILE");
  app.add_flag("--timeline-mark-cycles", raw.timelineMarkCycles, "Mark each engine cycle in the timeline")->group(engine);
  app.add_option("--timeline-max-mb", raw.timelineMaxMb, "Each rank's trace stops growing at this many MiB (default 64)")
      ->group(engine)->type_name("MB");
  app.add_option("--gloo-timeout-seconds", raw.glooTimeout,
                 "Seconds a rank waits for its peers to connect and in a collective (HVD_TIMEOUT; default 30)")
      ->group(engine)
      ->type_name("SECONDS");
  app.add_option("--log-level", raw.logLevel, "The ranks' runtime log level: trace, debug, info, warning, error, fatal")
      ->group(engine)->type_name("LEVEL");
  app.add_option("--signal", raw.signal,
                 "Preemption signal and how long before the time limit Slurm sends it (default USR2@90)")
      ->group("Preemption")->type_name("SIG@SECONDS");
  app.add_flag("--requeue", o.requeue, "On that signal, requeue the job (scontrol requeue) once the ranks end")
      ->group("Preemption");
  app.add_option("--preempt-grace", raw.preemptGrace,
                 "With --requeue: seconds ranks get after the signal before hvdrun stops them (default 60)")
      ->group("Preemption")->type_name("SECONDS");
  const char* script = "Job scripts (hvdrun sbatch)";
  app.add_flag("--submit", o.sbatch.submit, "Submit the script with sbatch and print the job id")->group(script);
  app.add_option("--template", o.sbatch.templateFile, "Render this template instead of the built-in one")
      ->group(script)->type_name("FILE");
  app.add_option("--job-name", o.sbatch.jobName, "Job name (default: the program's name)")->group(script)->type_name("NAME");
  app.add_option("--nodes", raw.nodes, "Nodes (default: enough for -np)")->group(script)->type_name("N");
  app.add_option("--ntasks-per-node", raw.ntasksPerNode, "Ranks per node (default: --gpus-per-node); in a launch, as --nproc-per-node")
      ->group(script)->type_name("N");
  app.add_option("--gpus-per-node", raw.gpusPerNode, "GPUs per node")->group(script)->type_name("N");
  app.add_option("--cpus-per-task", raw.cpusPerTask, "CPUs per rank")->group(script)->type_name("N");
  app.add_option("--time", o.sbatch.time, "Time limit, as sbatch takes it (e.g. 2:00:00, 1-12)")
      ->group(script)->type_name("TIME");
  app.add_option("--partition", o.sbatch.partition, "Partition")->group(script)->type_name("NAME");
  app.add_option("--account", o.sbatch.account, "Account to charge")->group(script)->type_name("NAME");
  app.add_option("--qos", o.sbatch.qos, "Quality of service")->group(script)->type_name("NAME");
  app.add_option("--constraint", o.sbatch.constraint, "Node features required")->group(script)->type_name("LIST");
  app.add_option("--mem", o.sbatch.mem, "Memory per node (e.g. 64G)")->group(script)->type_name("SIZE");
  app.add_option("--job-output", o.sbatch.output, "The job's stdout file (default %x-%j.out)")
      ->group(script)->type_name("FILE");
  app.add_option("--job-error", o.sbatch.error, "The job's stderr file (default %x-%j.err)")
      ->group(script)->type_name("FILE");
  list(app.add_option("--sbatch-args,--sbatch-arg", o.sbatch.extraArgs, "Another #SBATCH option, verbatim (repeatable)"))
      ->group(script)->type_name("ARG")->allow_extra_args(false);
  list(app.add_option("--modules,--module", o.sbatch.modules, "A module to load before the launch (repeatable)"))
      ->group(script)->type_name("NAME")->allow_extra_args(false);
  list(app.add_option("--env", o.sbatch.env, "A variable to export before the launch (repeatable)"))
      ->group(script)->type_name("NAME=VALUE")->allow_extra_args(false);
  app.add_option("--venv", o.sbatch.venv, "A Python virtualenv to activate before the launch")
      ->group(script)->type_name("DIR");
  list(app.add_option("--setup", o.sbatch.setup, "A shell line to run before the launch (repeatable)"))
      ->group(script)->type_name("LINE")->allow_extra_args(false);
  app.add_option("--config-file", o.configFile,
                 "Read settings from this TOML file, or horovodrun's YAML config (default: "
                 "$XDG_CONFIG_HOME/hvdrun/config.toml)")
      ->group("Config")->type_name("FILE");
  app.add_option("--profile", o.profile, "Use the config file's [profile.NAME] table (or HVDRUN_PROFILE)")
      ->group("Config")->type_name("NAME");
  app.add_flag("--no-config", o.noConfig, "Ignore config files and HVDRUN_* variables")->group("Config");
  app.add_flag("--check-build", o.checkBuild,
               "Show which controllers, tensor operations and launchers work here")
      ->group("Information");
  app.add_flag("-v,--verbose", o.verbose,
               "With --check-build: versions found and the reason for every [ ] (-v alone: --version, as horovodrun's)")
      ->group("Information");
  app.add_flag("--version", o.showVersion, "Print version, commit, compiler and backends")->group("Information");
  app.add_flag("-h,--help", o.help, "Print this help")->group("Information");
  // horovodrun's flags without a counterpart: out of --help (docs/hvdrun.md lists them).
  for (const HorovodrunFlag& f : ignoredForeignFlags()) {
    (f.takesValue ? app.add_option(f.name, raw.ignoredValue) : app.add_flag(f.name))->group("");
  }
  for (const char* name : defaultForeignFlags()) app.add_flag(name)->group("");
}

std::vector<std::string> knownOptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  for (const Alias& a : kAliases) names.emplace_back(a.shortForm);
  return names;
}

[[noreturn]] void unknownOption(const CLI::App& app, const std::string& token) {
  std::string name = token.substr(0, token.find('='));
  if (const RefusedFlag* f = refusedForeignFlag(name)) throw UserError(ExitCode::kUsage, name + " " + f->why, f->hint);
  std::string best = closestMatch(name, knownOptionNames(app), 3);  // suggest only close matches
  throw UserError(ExitCode::kUsage, "unknown option '" + name + "'",
                  best.empty() ? kUsageHint : "did you mean '" + best + "'?");
}

// CLI11's help, with the spellings users know (-np, -cb) in the option column, without
// CLI11's generic second usage line and with single blank lines between groups.
std::string tidyHelp(std::string help) {
  std::istringstream in(help);
  std::string out;
  bool lastBlank = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Usage: hvdrun [OPTIONS]", 0) == 0) continue;
    bool blank = line.empty();
    if (blank && lastBlank) continue;
    lastBlank = blank;
    for (const Alias& a : kAliases) {
      std::string prefix = std::string("  ") + a.longForm + " ";
      if (line.rfind(prefix, 0) != 0 && line != "  " + std::string(a.longForm)) continue;
      size_t descriptionAt = line.find_first_not_of(' ', line.find("  ", 2));
      std::string option = line.substr(2, line.find("  ", 2) - 2);
      std::string widened = "  " + std::string(a.shortForm) + ", " + option;
      size_t column = descriptionAt == std::string::npos ? widened.size() + 2 : std::max(descriptionAt, widened.size() + 2);
      line = widened + std::string(column - widened.size(), ' ') +
             (descriptionAt == std::string::npos ? "" : line.substr(descriptionAt));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace hvd::cli
