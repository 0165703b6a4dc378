// cli/options.cc: CLI11 set-up. horovodrun's single-dash long options (-np, -cb) are
// rewritten to their long forms first, because CLI11 reads "-np" as "-n -p".
#include "cli/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli/plan/rank_plan.h"
#include "cli/plan/whole_number.h"
#include "cli/user_error.h"
#include "runtime/common/ascii_case.h"
#include "runtime/common/closest_match.h"
#include "runtime/common/log.h"

namespace hvd::cli {
namespace {

struct Alias {
  const char* shortForm;
  const char* longForm;
};
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

constexpr const char* kUsageHint = "run 'hvdrun --help' for the options";

int parseIntIn(const std::string& option, const std::string& text, int minimum, int maximum) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < minimum || value > maximum) {
    throw UserError(ExitCode::kUsage,
                    option + " expects a whole number from " + std::to_string(minimum) + " to " +
                        std::to_string(maximum) + ", got '" + text + "'",
                    kUsageHint);
  }
  return value;
}

// A whole number past int's range reads as the nearest end of it: too many, or under 1.
int parsePositiveInt(const std::string& option, const std::string& text) {
  auto number = wholeNumber(text);
  if (!number) throw UserError(ExitCode::kUsage, option + " expects a whole number, got '" + text + "'", kUsageHint);
  const int value = *number;
  if (value <= 0) {
    throw UserError(ExitCode::kUsage, option + " must be at least 1, got '" + text + "'", kUsageHint);
  }
  return value;
}

// "0,3-5" -> {0,3,4,5}.
std::set<int> parseRankList(const std::string& option, const std::string& text) {
  std::set<int> ranks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-', 1);
    int lo = parseIntIn(option, item.substr(0, dash), 0, 1 << 24);
    int hi = dash == std::string::npos ? lo : parseIntIn(option, item.substr(dash + 1), 0, 1 << 24);
    if (hi < lo || hi - lo > 1 << 20) {
      throw UserError(ExitCode::kUsage, option + ": '" + item + "' runs downwards or is too long", kUsageHint);
    }
    for (int r = lo; r <= hi; ++r) ranks.insert(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

// Set for every rank by hvdrun itself: -x may not give them (the rank's environment would
// hold two values). The identity variables are rankEnvironment's own; the rest are the
// plan's (plan_environment.cc).
bool setPerRank(const std::string& name) {
  static const std::set<std::string> kNames = [] {
    std::set<std::string> names = {"MASTER_ADDR", "MASTER_PORT", "TF_CONFIG", "CUDA_VISIBLE_DEVICES"};
    for (const std::string& kv : rankEnvironment(RankAssignment{})) names.insert(kv.substr(0, kv.find('=')));
    return names;
  }();
  return kNames.count(name) > 0 || name.rfind("HVD_", 0) == 0 || name.rfind("TORCHELASTIC_", 0) == 0;
}

// -x NAME=VALUE or -x NAME (hvdrun's own value; skipped when unset, as mpirun skips it), as
// "NAME=value" lines; `taken`: the variables the options already give the ranks.
std::vector<std::string> exportedVariables(const std::vector<std::string>& items, const std::vector<std::string>& taken) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const std::string& kv : taken) names.insert(kv.substr(0, kv.find('=')));
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    auto refuse = [&](const std::string& why, const std::string& hint) {
      throw UserError(ExitCode::kUsage, "-x " + item + ": " + why, hint);
    };
    const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!valid) {
      refuse("'" + name + "' is not a variable name (letters, digits and '_', not starting with a digit)",
             "write -x NAME=VALUE to set a variable for every rank, or -x NAME to pass on hvdrun's own");
    }
    if (setPerRank(name)) {
      refuse("hvdrun sets " + name + " for each rank itself",
             "docs/environment.md lists what hvdrun sets; its options choose those values (-np, --gpus-per-rank, ...)");
    }
    if (!names.insert(name).second) {
      refuse(name + " is given twice (by -x or by an option of hvdrun's)", "give each variable once");
    }
    if (eq != std::string::npos) {
      out.push_back(item);
    } else if (const char* value = std::getenv(name.c_str()); value != nullptr) {
      out.push_back(name + "=" + value);
    }
  }
  return out;
}

// --stdin RANK or none. No "all": a pipe or terminal can be read once, and copying it to
// every rank would hold what the slowest reader has not taken yet.
void parseStdinTarget(const std::string& text, Options& o) {
  if (text == "none") {
    o.stdinRank.reset();
    return;
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw UserError(ExitCode::kUsage, "--stdin expects a rank or 'none', got '" + text + "'",
                    "one rank reads hvdrun's stdin (0 unless --stdin names another), the others read an empty one; "
                    "for input every rank reads, give the program a file to open");
  }
  o.stdinRank = value;
}

std::chrono::milliseconds parseSeconds(const std::string& option, const std::string& text) {
  double seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // Written so that NaN, which compares false with everything, fails it too.
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds >= 0 && seconds <= 86400)) {
    throw UserError(ExitCode::kUsage, option + " expects seconds between 0 and 86400, got '" + text + "'",
                    kUsageHint);
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// --signal NAME[@SECONDS]: the preemption notice. Only USR1 and USR2 qualify, because
// hvdrun treats the others (TERM, INT, HUP) as orders to stop the job.
void parsePreemptSignal(const std::string& text, Options& o) {
  std::string name = text.substr(0, text.find('@'));
  if (name.rfind("B:", 0) == 0) name = name.substr(2);  // sbatch's "batch shell only" prefix
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name != "USR1" && name != "USR2") {
    throw UserError(ExitCode::kUsage, "--signal: '" + text + "' is not a preemption signal hvdrun can forward",
                    "use USR2@SECONDS (the default, USR2@90) or USR1@SECONDS; NCCL itself uses USR1");
  }
  o.preemptSignal = name;
  if (text.find('@') != std::string::npos) {
    o.preemptSeconds = parseIntIn("--signal", text.substr(text.find('@') + 1), 0, 65535);
  }
}

// horovodrun's flags that hvdrun has under its own names (--nics, ...) are second names of
// its options. These are the rest. Tuning that hvdrun has no counterpart for is accepted,
// so a ported command line runs, with a note; what a fixed set of ranks cannot honour
// (elastic training) is refused, saying so.
struct HorovodrunFlag {
  const char* name;
  bool takesValue;
  const char* note;                 // why it changes nothing here, and what to use
  const char* whose = "horovodrun"; // the launcher it comes from
};
constexpr HorovodrunFlag kIgnoredHorovodrunFlags[] = {
    {"--hierarchical-allreduce", false,
     "hvd's ring already runs over shared memory within a host and TCP between hosts, and NCCL picks its own topology"},
    {"--hierarchical-allgather", false, "as for --hierarchical-allreduce"},
    {"--autotune", false, "hvdrun has no autotuner: set --fusion-threshold-mb and --cycle-time-ms"},
    {"--autotune-log-file", true, "hvdrun has no autotuner"},
    {"--autotune-warmup-samples", true, "hvdrun has no autotuner"},
    {"--autotune-steps-per-sample", true, "hvdrun has no autotuner"},
    {"--autotune-bayes-opt-max-samples", true, "hvdrun has no autotuner"},
    {"--autotune-gaussian-process-noise", true, "hvdrun has no autotuner"},
    {"--num-nccl-streams", true, "hvd runs NCCL on one stream (hvd.set_gpu_stream picks it)"},
    {"--thread-affinity", true, "pin ranks with --bind-to"},
    {"--ccl-bgt-affinity", true, "pin ranks with --bind-to (horovodrun's older name for --thread-affinity)"},
    {"--binding-args", true, "pin ranks with --bind-to, which hvdrun passes on to mpirun and srun"},
    {"--tcp", false,
     "hvd's ring moves CPU data over TCP and shared memory already; under --mpi, --mpi-args '--mca btl tcp,self' "
     "chooses Open MPI's"},
    {"--mpi-threads-disable", false, "hvd asks MPI for MPI_THREAD_SERIALIZED only"},
    {"--log-with-timestamp", false, "the ranks' runtime log lines carry no time; --timestamp-output stamps every line"},
    // torchrun's that ask for nothing hvdrun lacks.
    {"--monitor-interval", true, "hvdrun hears of each rank's end at once, without polling", "torchrun"},
    {"--monitor_interval", true, "hvdrun hears of each rank's end at once, without polling", "torchrun"},
    {"--role", true, "every rank is a worker (TF_CONFIG's roles: --tf-config)", "torchrun"},
};
// Accepted silently: they ask for what hvdrun does anyway (hvdrun keeps no cache of start-up
// checks for --disable-cache to turn off).
constexpr const char* kDefaultHorovodrunFlags[] = {
    "--disable-cache", "--no-hierarchical-allreduce", "--no-hierarchical-allgather", "--no-autotune",
    "--no-timeline-mark-cycles", "--log-without-timestamp", "--log-hide-timestamp", "--no-torus-allreduce",
    // torchrun's: a rendezvous on this machine alone, which is hvdrun's own; and running the
    // program as given, which hvdrun always does.
    "--standalone", "--no-python", "--no_python",
    // mpirun's: every line already carries its rank; hvdrun runs as root (and under --mpi
    // passes --allow-run-as-root to mpirun itself).
    "--tag-output", "--allow-run-as-root"};
// Other launchers' flags refused (exit 2) with this reason and hint: horovodrun's without a
// counterpart here, torchrun's multi-node rendezvous and module mode.
struct RefusedFlag {
  const char* name;
  const char* why;
  const char* hint;
};
constexpr const char* kElasticWhy =
    "is horovodrun's elastic training's, which hvdrun does not have: its elastic jobs (--min-np) start -np ranks, go "
    "on without the ones that fail, and grow as --host-discovery-script allows, at once";
constexpr const char* kElasticHint =
    "give -np and --min-np for a job that survives failed ranks; --max-restarts N starts every rank again after a "
    "failure; under Slurm, --requeue restarts it after a preemption";
constexpr const char* kTorchrunNodesWhy =
    "is torchrun's multi-node rendezvous, which hvdrun does not need: one hvdrun command starts the ranks of every "
    "host (the Slurm allocation's nodes, -H or --hostfile), each with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE "
    "set";
constexpr const char* kTorchrunNodesHint =
    "leave it out and run hvdrun once, not once per node; --nproc-per-node K puts K ranks on every host";
constexpr const char* kTorchrunLogsWhy = "is torchrun's way to keep each rank's output";
constexpr const char* kTorchrunLogsHint =
    "hvdrun prints every rank's lines prefixed [rank]<stdout>: on its own output, and --output-filename DIR also "
    "writes DIR/rank.N/stdout and stderr (--ranks-filter shows fewer on the console)";
constexpr const char* kTorchrunModuleWhy = "is torchrun's: run a Python module";
constexpr const char* kTorchrunModuleHint = "give the interpreter: hvdrun [options] python -m MODULE [args]";
constexpr const char* kTorchrunRunPathWhy = "is torchrun's: run the script in its own interpreter";
constexpr const char* kTorchrunRunPathHint = "give the interpreter: hvdrun [options] python SCRIPT [args]";
constexpr const char* kMcaWhy = "is mpirun's MCA parameter";
constexpr const char* kMcaHint = "with --mpi, pass it on: --mpi-args '--mca NAME VALUE'";
constexpr const char* kMapReportWhy = "is mpirun's report of where ranks run";
constexpr const char* kMapReportHint = "hvdrun --dry-run (or hvdrun plan) prints each rank's host, local rank and GPUs";
constexpr const char* kWdirWhy = "is mpirun's working directory for the ranks";
constexpr const char* kWdirHint = "ranks start in hvdrun's: cd DIR before hvdrun";
constexpr RefusedFlag kRefusedLauncherFlags[] = {
    {"--cooldown-range", kElasticWhy, kElasticHint},
    {"--jsrun", "is horovodrun's IBM LSF launcher, which hvdrun does not have",
     "launch with --mpi (Open MPI's mpirun), or under Slurm"},
    {"--torus-allreduce", "is horovodrun's torus allreduce, which hvd does not have",
     "leave it out: hvd picks its allreduce by size (docs/runtime.md)"},
    // torchrun's multi-node rendezvous, both spellings.
    {"--rdzv-backend", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv_backend", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv-endpoint", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv_endpoint", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv-id", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv_id", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv-conf", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--rdzv_conf", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--master-addr", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--master_addr", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--master-port", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--master_port", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--node-rank", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--node_rank", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--local-addr", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--local_addr", kTorchrunNodesWhy, kTorchrunNodesHint},
    {"--log-dir", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--log_dir", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--redirects", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--tee", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--local-ranks-filter", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--local_ranks_filter", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--logs-specs", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--logs_specs", kTorchrunLogsWhy, kTorchrunLogsHint},
    {"--run-path", kTorchrunRunPathWhy, kTorchrunRunPathHint},
    {"--run_path", kTorchrunRunPathWhy, kTorchrunRunPathHint},
    {"-m", kTorchrunModuleWhy, kTorchrunModuleHint},  // --module is hvdrun sbatch's (takeSbatchOptionsInLaunch)
    // srun's and mpirun's, where they mean something else here or nothing.
    {"-N",
     "is srun's and sbatch's node count; a launch runs on the hosts it has (this machine, -H or --hostfile, or the "
     "nodes of the Slurm allocation it is in)",
     "to submit a job on N nodes: hvdrun sbatch -N N --submit ...; --nnodes N checks how many hosts a launch has"},
    {"-c", "is srun's CPUs per task; a launch shares each host's CPUs among its ranks (OMP_NUM_THREADS is set to match)",
     "--bind-to core gives each rank its own cores; in a job script: hvdrun sbatch -c N"},
    {"--export", "is srun's; every rank gets hvdrun's whole environment already",
     "-x NAME=VALUE (or -x NAME) sets one variable for the ranks"},
    {"--map-by", "is mpirun's placement", "--nproc-per-node K puts K ranks on every host (ppr:K:node); --bind-to pins them"},
    {"--mca", kMcaWhy, kMcaHint},
    {"-mca", kMcaWhy, kMcaHint},
    {"--display-map", kMapReportWhy, kMapReportHint},
    {"--report-bindings", kMapReportWhy, kMapReportHint},
    {"-wdir", kWdirWhy, kWdirHint},
    {"--wdir", kWdirWhy, kWdirHint},
    {"--oversubscribe", "is mpirun's: more ranks on a host than its slots",
     "give the host more slots (-H host:N, or slots=N in the hostfile); on this machine alone -np is not bounded by "
     "its cores"},
};

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
  for (const RefusedFlag& f : kRefusedLauncherFlags) {
    if (name == f.name) throw UserError(ExitCode::kUsage, name + " " + f.why, f.hint);
  }
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

}  // namespace


namespace {

// Text values of options that need checking after CLI11 has read them.
struct RawValues {
  std::string numProc, nprocPerNode, nnodes, killGrace, gpusPerRank, tfPs, tfPortBase, rank, ranksFilter, startTimeout;
  std::string maxRestarts;
  std::string minNp, resetLimit, maxNp, slotsPerHost, elasticTimeout;
  std::vector<std::string> cooldownRange;  // --blacklist-cooldown-range MIN MAX
  std::string signal, preemptGrace, nodes, ntasksPerNode, gpusPerNode, cpusPerTask;
  std::string fusionThresholdMb, cycleTimeMs, cacheCapacity, stallWarning, stallShutdown, logLevel;
  std::string timelineFilename, timelineMaxMb, sshPort, maxLineKb, bindTo, stdinTarget;
  std::vector<std::string> exports;  // -x NAME[=VALUE], as given
  bool noPrefix = false, noStallCheck = false, timelineMarkCycles = false;
  std::string mpiArgs, glooTimeout;  // horovodrun's --mpi-args and --gloo-timeout-seconds
  bool gloo = false;
  std::string ignoredValue;  // what horovodrun's flags without a counterpart were given
};

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
  for (const HorovodrunFlag& f : kIgnoredHorovodrunFlags) keys.insert(std::string(f.name).substr(2));
  for (const char* name : kDefaultHorovodrunFlags) keys.insert(std::string(name).substr(2));
  return keys;
}();
// Settings that never go on a job script's launch line: what to print instead of running,
// and where hosts come from (inside the job hvdrun reads the allocation).
const std::set<std::string> kNotForJobs = {"dry-run", "check-build", "verbose", "format", "rank",
                                           "hosts", "hostfile", "no-slurm"};

// The engine options as the variables the ranks' runtime reads (runtime/common/env_registry.cc),
// checked here so that a typo fails before any rank starts.
std::vector<std::string> runtimeVariables(const RawValues& raw) {
  std::vector<std::string> vars;
  if (!raw.fusionThresholdMb.empty()) {
    long long mb = parseIntIn("--fusion-threshold-mb", raw.fusionThresholdMb, 0, 1 << 20);
    vars.push_back("HOROVOD_FUSION_THRESHOLD=" + std::to_string(mb * 1024 * 1024));
  }
  if (!raw.cycleTimeMs.empty()) {
    double ms = -1;
    const std::string& t = raw.cycleTimeMs;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
    if (ec != std::errc() || end != t.data() + t.size() || !(ms > 0) || ms > 10000) {
      throw UserError(ExitCode::kUsage, "--cycle-time-ms expects milliseconds above 0, at most 10000, got '" + t + "'",
                      kUsageHint);
    }
    vars.push_back("HOROVOD_CYCLE_TIME=" + t);
  }
  if (!raw.cacheCapacity.empty()) {
    vars.push_back("HOROVOD_CACHE_CAPACITY=" + std::to_string(parseIntIn("--cache-capacity", raw.cacheCapacity, 0, 1 << 16)));
  }
  if (raw.noStallCheck) vars.push_back("HOROVOD_STALL_CHECK_DISABLE=1");
  if (!raw.stallWarning.empty()) {
    vars.push_back("HOROVOD_STALL_CHECK_TIME_SECONDS=" +
                   std::to_string(parseIntIn("--stall-check-warning-time-seconds", raw.stallWarning, 1, 604800)));
  }
  if (!raw.stallShutdown.empty()) {
    vars.push_back("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=" +
                   std::to_string(parseIntIn("--stall-check-shutdown-time-seconds", raw.stallShutdown, 0, 604800)));
  }
  if (!raw.timelineFilename.empty()) {
    // Absolute, so ranks that start elsewhere (srun, another working directory) agree.
    std::error_code ec;
    auto absolute = std::filesystem::absolute(raw.timelineFilename, ec);
    vars.push_back("HOROVOD_TIMELINE=" + (ec ? raw.timelineFilename : absolute.lexically_normal().string()));
  }
  if (raw.timelineMarkCycles) vars.push_back("HOROVOD_TIMELINE_MARK_CYCLES=1");
  if (!raw.timelineMaxMb.empty()) {
    vars.push_back("HVD_TIMELINE_MAX_MB=" + std::to_string(parseIntIn("--timeline-max-mb", raw.timelineMaxMb, 1, 1 << 20)));
  }
  if (!raw.glooTimeout.empty()) {
    // Gloo's timeout in horovodrun: how long a rank waits for its peers to connect and in
    // an operation, as HVD_TIMEOUT is for hvd's ring.
    vars.push_back("HVD_TIMEOUT=" + std::to_string(parseIntIn("--gloo-timeout-seconds", raw.glooTimeout, 1, 86400)));
  }
  if (!raw.logLevel.empty()) {
    // Read as the ranks' runtime reads it, in any case (horovodrun's choices are upper case).
    auto level = parseLogLevel(raw.logLevel);
    if (!level) {
      throw UserError(ExitCode::kUsage, "--log-level expects trace, debug, info, warning, error or fatal, got '" +
                                            raw.logLevel + "'",
                      kUsageHint);
    }
    vars.push_back("HOROVOD_LOG_LEVEL=" + std::string(logLevelName(*level)));
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
  for (const HorovodrunFlag& f : kIgnoredHorovodrunFlags) {
    (f.takesValue ? app.add_option(f.name, raw.ignoredValue) : app.add_flag(f.name))->group("");
  }
  for (const char* name : kDefaultHorovodrunFlags) app.add_flag(name)->group("");
}

const char* kDescription =
    "hvdrun: start and supervise the ranks of a distributed training job.\n"
    "Usage: hvdrun [options] [--] program [args...]\n"
    "       hvdrun plan [options] [program [args...]]   (same as --dry-run)\n"
    "       hvdrun sbatch (--dry-run|--submit) [options] [--] program [args...]\n"
    "       hvdrun --check-build [--verbose]\n"
    "       hvdrun hostlist [--expand|--compress|--sorted|--count] [EXPRESSION...]\n"
    "       hvdrun timeline (merge -o OUT TRACE...|summary TRACE)";

// "--num-proc" -> "num-proc": the option's first long name, the key config files use.
std::string canonicalKey(const CLI::Option& opt) {
  return opt.get_lnames().empty() ? opt.get_snames().front() : opt.get_lnames().front();
}

// The options on a command line, in order, each with its value tokens; stops at the
// program. Aliases (-np) are rewritten to long forms.
struct CommandLine {
  std::vector<std::pair<std::string, std::vector<std::string>>> options;  // key, tokens
  std::vector<std::string> rest;  // the program and its arguments, "--" included
};

// Where the program starts: "--", a word that is not an option, or "-" (stdin).
bool startsProgram(const std::string& arg) { return arg == "--" || arg.empty() || arg[0] != '-' || arg == "-"; }

// An option's CLI11 name: "-np" is "--num-proc".
std::string canonicalName(std::string name) {
  for (const Alias& a : kAliases) {
    if (name == a.shortForm) name = a.longForm;
  }
  return name;
}

// Whether `arg` (named `name`) takes its value from the next token, which may start with '-'.
bool takesNextToken(const CLI::App& app, const std::string& name, const std::string& arg) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt != nullptr && opt->get_expected_min() > 0 && arg.find('=') == std::string::npos;
}

// An option that takes a value given an empty one ("--timeline-filename=$UNSET"): CLI11
// then took the next token as its value, so "--timeline-filename= -np 2 ./train" failed
// saying -np was missing. `next`: the token after arg, if any.
void refuseEmptyValue(const CLI::App& app, const std::string& name, const std::string& arg, const std::string* next) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  if (opt == nullptr || opt->get_expected_min() == 0) return;
  const size_t eq = arg.find('=');
  const bool empty = eq != std::string::npos ? eq + 1 == arg.size() : next != nullptr && next->empty();
  if (!empty) return;
  throw UserError(ExitCode::kUsage, name + " was given an empty value",
                  "give it one, or leave the option out (an unset shell variable, as in " + name + "=$UNSET, is empty)");
}

CommandLine splitCommandLine(const CLI::App& app, const std::vector<std::string>& args) {
  CommandLine line;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (startsProgram(arg)) {
      line.rest.assign(args.begin() + static_cast<long>(i), args.end());
      break;
    }
    std::string name = canonicalName(arg.substr(0, arg.find('=')));
    refuseEmptyValue(app, name, arg, i + 1 < args.size() ? &args[i + 1] : nullptr);
    std::vector<std::string> tokens{name + (arg.find('=') != std::string::npos ? arg.substr(arg.find('=')) : "")};
    if (takesNextToken(app, name, arg)) {
      // Most take one; --blacklist-cooldown-range MIN MAX two.
      const int values = std::max(app.get_option_no_throw(name)->get_expected_min(), 1);
      for (int v = 0; v < values && i + 1 < args.size(); ++v) tokens.push_back(args[++i]);
    }
    const CLI::Option* opt = app.get_option_no_throw(name);
    line.options.emplace_back(opt != nullptr ? canonicalKey(*opt) : name, std::move(tokens));
  }
  return line;
}

// A layer's value as command-line tokens.
std::vector<std::string> tokensFor(const SettingKey& key, const std::vector<std::string>& values) {
  std::vector<std::string> tokens;
  if (key.kind == SettingKind::kFlag) {
    tokens.push_back("--" + key.key + "=" + (values.empty() ? "true" : values.back()));
    return tokens;
  }
  for (const std::string& v : values) tokens.push_back("--" + key.key + "=" + v);
  return tokens;
}

}  // namespace

std::vector<SettingKey> settingKeys() {
  CLI::App app;
  Options o;
  RawValues raw;
  defineOptions(app, o, raw);
  std::vector<SettingKey> keys;
  for (const CLI::Option* opt : app.get_options()) {
    std::string key = canonicalKey(*opt);
    if (kNotSettings.count(key) != 0) continue;
    SettingKind kind = opt->get_expected_min() == 0 ? SettingKind::kFlag
                       : opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll ? SettingKind::kList
                                                                                            : SettingKind::kValue;
    std::vector<std::string> others;
    for (const std::string& l : opt->get_lnames()) {
      if (l != key) others.push_back(l);
    }
    for (const std::string& sname : opt->get_snames()) {
      if (sname != key) others.push_back(sname);
    }
    for (const Alias& a : kAliases) {
      const std::string_view spelling = a.shortForm;
      if (a.longForm == "--" + key) others.emplace_back(spelling.substr(spelling.find_first_not_of('-')));
    }
    keys.push_back({key, kind, kSbatchOnlyKeys.count(key) != 0, std::move(others)});
  }
  return keys;
}

void takeSbatchOptionsInLaunch(Options& o) {
  if (o.givenOnCommandLine.count("ntasks-per-node") != 0) {
    if (o.numProc > 0) {
      throw UserError(ExitCode::kUsage, "-np and --ntasks-per-node both say how many ranks: give one of them",
                      "-np N starts N ranks in all; --ntasks-per-node K (as --nproc-per-node K) starts K on every host");
    }
    if (o.ranksPerHost > 0) {
      throw UserError(ExitCode::kUsage,
                      "--ntasks-per-node and --nproc-per-node both say how many ranks each host gets: give one of them",
                      "they mean the same here (srun's and torchrun's names)");
    }
    o.ranksPerHost = o.sbatch.ntasksPerNode;
  }
  // What the job script holds besides its #SBATCH lines: the set-up before the launch.
  static const std::set<std::string> kScriptKeys = {"submit", "template", "modules", "env", "venv", "setup"};
  for (const std::string& key : kSbatchOnlyKeys) {
    if (key == "ntasks-per-node" || o.givenOnCommandLine.count(key) == 0) continue;
    const std::string what = kScriptKeys.count(key) != 0
                                 ? "it shapes the job script hvdrun sbatch writes, and a launch writes none"
                                 : "it shapes the allocation a job script asks Slurm for, and a launch asks for none";
    std::string hint = "to submit a job: hvdrun sbatch --submit" + (key == "submit" ? "" : " --" + key + " ...") +
                       " -np N program; to run here, leave it out";
    if (key == "nodes") hint += "; --nnodes N checks how many hosts a launch has";
    if (key == "env") hint += "; -x NAME=VALUE sets a variable for the ranks";
    if (key == "modules") hint += "; torchrun's --module (run a Python module) is: hvdrun [options] python -m MODULE";
    throw UserError(ExitCode::kUsage,
                    "--" + key + " is for hvdrun sbatch: " + what +
                        " (it runs on this machine, the -H or --hostfile hosts, or the Slurm allocation it is in)",
                    hint);
  }
}

std::vector<std::string> withSbatchShortOptions(const std::vector<std::string>& args) {
  static constexpr std::pair<char, const char*> kSbatchShort[] = {
      {'N', "--nodes"},   {'t', "--time"},          {'p', "--partition"}, {'A', "--account"},    {'q', "--qos"},
      {'C', "--constraint"}, {'c', "--cpus-per-task"}, {'J', "--job-name"}, {'o', "--job-output"}, {'e', "--job-error"}};
  auto longFor = [](const std::string& arg) -> const char* {
    if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') return nullptr;
    for (const auto& [letter, name] : kSbatchShort) {
      if (arg[1] == letter) return name;
    }
    return nullptr;
  };
  CLI::App app;
  Options o;
  RawValues raw;
  defineOptions(app, o, raw);
  const std::vector<std::string> known = knownOptionNames(app);
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (startsProgram(arg)) {  // the program and what follows
      out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    std::string name = arg.substr(0, arg.find('='));
    const char* sbatchName = longFor(arg);
    // "-p" and the other letters exactly, or with the value attached ("-N4"); hvdrun's own
    // spellings that start with one of those letters (-cb) stay theirs.
    bool exact = sbatchName != nullptr && arg.size() == 2;
    bool attached = sbatchName != nullptr && arg.size() > 2 && std::find(known.begin(), known.end(), name) == known.end();
    if (exact) {
      out.emplace_back(sbatchName);
      if (i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    if (attached) {
      out.push_back(std::string(sbatchName) + "=" + arg.substr(arg[2] == '=' ? 3 : 2));
      continue;
    }
    out.push_back(arg);
    if (takesNextToken(app, canonicalName(name), arg) && i + 1 < args.size()) out.push_back(args[++i]);
  }
  return out;
}

Options parseOptions(const std::vector<std::string>& args, const std::vector<SettingLayer>& layers) {
  // `horovodrun -v` alone prints its version; hvdrun's -v is --verbose (hvdrun -cb -v), which
  // alone would be a usage error, so alone it is the version here too.
  if (args == std::vector<std::string>{"-v"}) return parseOptions({"--version"}, layers);
  Options o;
  RawValues raw;
  CLI::App app{kDescription, "hvdrun"};
  defineOptions(app, o, raw);

  CommandLine line = splitCommandLine(app, args);
  for (const auto& [key, tokens] : line.options) o.givenOnCommandLine.insert(key);
  // Each key from the highest layer that has it, unless the command line does.
  std::map<std::string, std::vector<std::string>> chosen;
  std::map<std::string, std::string> chosenFrom;  // key -> the layer's origin, for messages
  for (const SettingLayer& layer : layers) {
    for (const auto& [key, values] : layer.values) {
      if (o.givenOnCommandLine.count(key) == 0) chosen[key] = values, chosenFrom[key] = layer.origin;
    }
  }
  std::vector<std::string> merged;
  std::vector<std::string> launch;
  const std::vector<SettingKey> keys = chosen.empty() ? std::vector<SettingKey>{} : settingKeys();
  for (const SettingKey& key : keys) {
    auto it = chosen.find(key.key);
    if (it == chosen.end()) continue;
    if (key.kind != SettingKind::kFlag &&
        std::any_of(it->second.begin(), it->second.end(), [](const std::string& v) { return v.empty(); })) {
      throw UserError(ExitCode::kUsage, chosenFrom[key.key] + ": '" + key.key + "' is empty",
                      "give it a value, or leave it out");
    }
    std::vector<std::string> tokens = tokensFor(key, it->second);
    merged.insert(merged.end(), tokens.begin(), tokens.end());
    if (!key.sbatchOnly && kNotForJobs.count(key.key) == 0) launch.insert(launch.end(), tokens.begin(), tokens.end());
  }
  for (const auto& [key, tokens] : line.options) {
    merged.insert(merged.end(), tokens.begin(), tokens.end());
    if (kSbatchOnlyKeys.count(key) == 0 && kNotSettings.count(key) == 0 && kNotForJobs.count(key) == 0) {
      launch.insert(launch.end(), tokens.begin(), tokens.end());
    }
  }
  merged.insert(merged.end(), line.rest.begin(), line.rest.end());

  std::vector<std::string> reversed(merged.rbegin(), merged.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    throw UserError(ExitCode::kUsage, what.empty() ? "cannot parse the command line" : what, kUsageHint);
  }
  o.helpText = tidyHelp(app.help());
  o.program = app.remaining();
  if (!o.program.empty() && o.program.front() == "--") o.program.erase(o.program.begin());
  if (!o.program.empty() && !o.program.front().empty() && o.program.front()[0] == '-' &&
      !(args.size() >= o.program.size() + 1 && args[args.size() - o.program.size() - 1] == "--")) {
    unknownOption(app, o.program.front());
  }
  o.launchArgs = std::move(launch);
  for (const HorovodrunFlag& f : kIgnoredHorovodrunFlags) {
    if (app.get_option(f.name)->count() > 0) {
      o.notes.push_back(std::string(f.name) + " (" + f.whose + "'s) changes nothing here: " + f.note);
    }
  }
  if (raw.gloo && o.useMpi) {
    throw UserError(ExitCode::kUsage, "--gloo and --mpi ask for two launches",
                    "leave out --gloo (hvdrun starts ranks without MPI unless --mpi is given)");
  }
  if (!raw.mpiArgs.empty()) {
    if (!o.useMpi) {
      throw UserError(ExitCode::kUsage, "--mpi-args '" + raw.mpiArgs + "' is for mpirun, which runs only with --mpi",
                      "add --mpi, or leave out --mpi-args");
    }
    std::istringstream words(raw.mpiArgs);
    for (std::string w; words >> w;) o.mpiArgs.push_back(w);
  }
  if (o.networkInterface.find(',') != std::string::npos) {
    throw UserError(ExitCode::kUsage,
                    "--network-interface (or --nics, --network-interfaces) '" + o.networkInterface +
                        "' names more than one interface",
                    "hvd's ring uses one interface between hosts: give one of them");
  }
  o.prefixOutput = !raw.noPrefix;
  if (!raw.ranksFilter.empty()) o.ranksFilter = parseRankList("--ranks-filter", raw.ranksFilter);
  // Far above any machine yet, and below what a plan can hold in memory in seconds: a typo
  // such as -np 2147483647 is an error, not an allocation failure or a fork bomb.
  if (!raw.numProc.empty()) {
    o.numProc = parsePositiveInt("-np", raw.numProc);
    if (o.numProc > kMaxRanks) {
      throw UserError(ExitCode::kUsage,
                      "-np " + raw.numProc + " is more ranks than hvdrun starts (at most " + std::to_string(kMaxRanks) + ")",
                      "check the number; hvdrun plans jobs of up to " + std::to_string(kMaxRanks) + " ranks");
    }
  }
  if (!raw.nprocPerNode.empty()) {
    const std::string word = asciiLower(raw.nprocPerNode);
    if (word == "gpu" || word == "cpu" || word == "auto") {
      o.ranksPerHostWord = word;  // counted where the plan knows the hosts (plan_builder.cc)
      // A rank per CPU is a CPU job: its GPUs left alone, as torchrun leaves them.
      if (word == "cpu") o.noGpu = true;
    } else if (word.find_first_not_of("0123456789") != std::string::npos || word.empty()) {
      throw UserError(ExitCode::kUsage,
                      "--nproc-per-node expects a whole number from 1 to " + std::to_string(kMaxRanks) +
                          ", or gpu, cpu or auto (torchrun's), got '" + raw.nprocPerNode + "'",
                      kUsageHint);
    } else {
      o.ranksPerHost = parseIntIn("--nproc-per-node", raw.nprocPerNode, 1, kMaxRanks);
    }
    if (o.numProc > 0) {
      throw UserError(ExitCode::kUsage, "-np and --nproc-per-node both say how many ranks: give one of them",
                      "-np N starts N ranks in all; --nproc-per-node K starts K on every host");
    }
  }
  if (!raw.nnodes.empty()) {
    // torchrun's N, or MIN:MAX; an elastic range is not a count of hosts.
    const size_t colon = raw.nnodes.find(':');
    const std::string low = raw.nnodes.substr(0, colon);
    if (low.empty() || low.find_first_not_of("0123456789") != std::string::npos) {
      throw UserError(ExitCode::kUsage, "--nnodes expects N or N:N hosts, got '" + raw.nnodes + "'", kUsageHint);
    }
    const int nodes = parseIntIn("--nnodes", low, 1, kMaxRanks);
    if (colon != std::string::npos && raw.nnodes.substr(colon + 1) != low) {
      throw UserError(ExitCode::kUsage,
                      "--nnodes " + raw.nnodes +
                          " asks for an elastic range of hosts, which hvdrun takes as --min-np and a discovery script",
                      "give the job's host count (--nnodes N), and --min-np and --host-discovery-script for an elastic "
                      "job (docs/hvdrun.md, \"Elastic jobs\")");
    }
    o.nnodes = nodes;
  }
  if (!raw.killGrace.empty()) o.killGrace = parseSeconds("--kill-grace", raw.killGrace);
  if (!raw.bindTo.empty()) {
    auto bind = parseBindTo(raw.bindTo);
    if (!bind) throw UserError(ExitCode::kUsage, bind.status().message(), bind.status().hint());
    o.bindTo = *bind;
  }
  if (!raw.maxLineKb.empty()) o.maxLineBytes = size_t{1024} * parseIntIn("--max-line-kb", raw.maxLineKb, 1, 1 << 20);
  if (!raw.stdinTarget.empty()) parseStdinTarget(raw.stdinTarget, o);
  if (!raw.startTimeout.empty()) o.startTimeout = parseSeconds("--start-timeout", raw.startTimeout);
  if (!raw.maxRestarts.empty()) o.maxRestarts = parseIntIn("--max-restarts", raw.maxRestarts, 0, 10000);
  if (!raw.minNp.empty()) o.minNp = parseIntIn("--min-np", raw.minNp, 1, 1 << 24);
  if (!raw.maxNp.empty()) o.maxNp = parseIntIn("--max-np", raw.maxNp, 1, 1 << 24);
  if (!raw.slotsPerHost.empty()) o.slotsPerHost = parseIntIn("--slots-per-host", raw.slotsPerHost, 1, 4096);
  if (!raw.resetLimit.empty()) o.resetLimit = parseIntIn("--reset-limit", raw.resetLimit, 0, 1 << 24);
  if (!raw.elasticTimeout.empty()) o.elasticTimeout = parseIntIn("--elastic-timeout", raw.elasticTimeout, 1, 86400);
  if (raw.cooldownRange.size() == 2) {
    o.cooldownMin = parseIntIn("--blacklist-cooldown-range", raw.cooldownRange[0], 1, 86400);
    o.cooldownMax = parseIntIn("--blacklist-cooldown-range", raw.cooldownRange[1], o.cooldownMin, 86400);
  }
  if (!raw.preemptGrace.empty()) o.preemptGrace = parseSeconds("--preempt-grace", raw.preemptGrace);
  if (!raw.gpusPerRank.empty()) o.gpusPerRank = parseIntIn("--gpus-per-rank", raw.gpusPerRank, 1, 64);
  if (!raw.tfPs.empty()) o.tfPs = parseIntIn("--tf-ps", raw.tfPs, 0, 1 << 20);
  if (!raw.sshPort.empty()) o.sshPort = parseIntIn("--ssh-port", raw.sshPort, 1, 65535);
  if (!raw.tfPortBase.empty()) o.tfPortBase = parseIntIn("--tf-port-base", raw.tfPortBase, 1, 65535);
  if (!raw.rank.empty()) o.rank = parseIntIn("--rank", raw.rank, 0, 1 << 24);
  if (!raw.nodes.empty()) o.sbatch.nodes = parseIntIn("--nodes", raw.nodes, 1, 1 << 20);
  if (!raw.ntasksPerNode.empty()) o.sbatch.ntasksPerNode = parseIntIn("--ntasks-per-node", raw.ntasksPerNode, 1, 4096);
  if (!raw.gpusPerNode.empty()) o.sbatch.gpusPerNode = parseIntIn("--gpus-per-node", raw.gpusPerNode, 0, 1024);
  if (!raw.cpusPerTask.empty()) o.sbatch.cpusPerTask = parseIntIn("--cpus-per-task", raw.cpusPerTask, 1, 4096);
  if (!raw.signal.empty()) parsePreemptSignal(raw.signal, o);
  o.runtimeVariables = runtimeVariables(raw);
  o.exportedVariables = exportedVariables(raw.exports, o.runtimeVariables);
  o.runtimeVariables.insert(o.runtimeVariables.end(), o.exportedVariables.begin(), o.exportedVariables.end());
  // The ranks' start-up check must allow what the plan allowed.
  if (o.oversubscribeGpus) o.runtimeVariables.push_back("HVD_OVERSUBSCRIBE_GPUS=1");
  for (const std::string& kv : o.runtimeVariables) {
    if (kv.rfind("HOROVOD_TIMELINE=", 0) == 0) o.timelineFile = kv.substr(std::string("HOROVOD_TIMELINE=").size());
  }
  return o;
}

}  // namespace hvd::cli
