// cli/options/options.h: hvdrun's command line, parsed into plain values. Parsing never touches
// the machine; every malformed input becomes a UserError naming the offending token.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/supervise/line_splitter.h"
#include "cli/plan/cpu_binding.h"

namespace hvd::cli {

// The most ranks one job may have: far above any machine yet, and small enough that a plan
// is made in about a second.
inline constexpr int kMaxRanks = 1 << 20;

struct Options {
  // What to do.
  bool showVersion = false;
  bool checkBuild = false;
  bool verbose = false;
  bool help = false;
  std::string helpText;  // the grouped --help text, filled by parseOptions

  // Launch.
  int numProc = 0;  // 0: not given
  int ranksPerHost = 0;  // torchrun's --nproc-per-node; 0: not given
  std::string ranksPerHostWord;  // its gpu, cpu or auto (plan.h PlanRequest); "": a number or none
  int nnodes = 0;        // torchrun's --nnodes: the hosts the plan must have; 0: not given
  std::vector<std::string> program;  // program and its arguments, verbatim

  bool useMpi = false;  // --mpi: launch through Open MPI's mpirun
  // --mpi-args (horovodrun's): more of mpirun's own options, split at spaces, before the
  // program on its command line; only with --mpi.
  std::vector<std::string> mpiArgs;
  bool pmix = false;    // --pmix: under srun, give MPI programs PMIx (srun --mpi=pmix)
  // --srun-args: more of srun's own options for the step, after hvdrun's (srun_args.h).
  std::vector<std::string> srunArgs;

  // Hosts and GPUs.
  std::string hosts;     // -H
  std::string hostfile;  // --hostfile
  bool noSlurm = false;
  int gpusPerRank = 1;
  bool noGpu = false;
  bool oversubscribeGpus = false;
  BindTo bindTo = BindTo::kNone;  // --bind-to
  std::string networkInterface;
  // ssh launches (hosts from -H or --hostfile, outside Slurm): 0 and empty mean ssh's own.
  int sshPort = 0;
  std::string sshIdentityFile;
  std::string sshCommand;    // the client and options, split at spaces; empty: "ssh"
  std::string remoteHvdrun;  // empty: the same path as this hvdrun

  // TensorFlow's TF_CONFIG.
  bool tfConfig = false;
  int tfPs = 0;
  bool tfChief = false;
  bool tfEvaluator = false;
  int tfPortBase = 0;  // 0: hvdrun chooses (cli/plan/tf_ports.h)

  // Showing the plan instead of running it.
  bool dryRun = false;
  std::string format = "table";
  std::optional<int> rank;

  // Output and supervision.
  bool prefixOutput = true;
  std::string outputDir;     // --output-filename
  std::set<int> ranksFilter;  // --ranks-filter; empty: every rank on the console
  bool timestampOutput = false;
  std::chrono::milliseconds killGrace{5000};
  size_t maxLineBytes = LineSplitter::kDefaultMaxLine;  // --max-line-kb: a rank's longer line is cut
  std::chrono::milliseconds startTimeout{30000};
  // --max-restarts (torchrun's): how often a job whose rank failed is started again, every
  // rank afresh; 0 (the default): a failure ends the job.
  int maxRestarts = 0;
  // --min-np (horovodrun's elastic training): when a rank fails, the others go on as a
  // smaller world while at least this many are left; 0 (the default): a failure ends the
  // job. --reset-limit: how many times the world may change (-1: no limit).
  int minNp = 0;
  int resetLimit = -1;
  // --elastic-timeout (horovodrun's): seconds a rank's init() waits for the other ranks of
  // the world it joins (HVD_ELASTIC_TIMEOUT); 0: not given (the runtime's default, 600).
  int elasticTimeout = 0;
  // --blacklist-cooldown-range MIN MAX (horovodrun's): a host where a rank failed gets no
  // new ranks for a random MIN-MAX seconds; unset (both 0): for the rest of the job.
  int cooldownMin = 0, cooldownMax = 0;
  // --host-discovery-script (horovodrun's): the hosts the job may grow onto; --max-np caps
  // the ranks running at once (0: no cap), --slots-per-host is a host's slots where the
  // script names none.
  std::string hostDiscoveryScript;
  int maxNp = 0;
  int slotsPerHost = 1;
  // --stdin: the rank that reads hvdrun's stdin (mpirun's default, rank 0); nullopt: none
  // does, every rank reads an empty one.
  std::optional<int> stdinRank = 0;

  // The ranks' runtime engine (horovodrun's names): "HOROVOD_...=value" for every rank, and
  // what -x gives them.
  std::vector<std::string> runtimeVariables;
  // -x (mpirun's): "NAME=value" for every rank, also set in hvdrun's own environment before
  // the plan is made (so the defaults it derives from that, OMP_NUM_THREADS, give way).
  std::vector<std::string> exportedVariables;
  std::string timelineFile;  // --timeline-filename, absolute: hvdrun merges the ranks' traces into it

  // Preemption (docs/sbatch.md): the signal Slurm sends before the time limit, which hvdrun
  // forwards to every rank and turns into the ranks' preemption flag; with requeue, the
  // job is requeued once the ranks have ended or preemptGrace has passed.
  std::string preemptSignal = "USR2";
  int preemptSeconds = 90;  // --signal USR2@90: how long before the time limit
  bool requeue = false;
  std::chrono::milliseconds preemptGrace{60000};

  // Config files and HVDRUN_* variables (docs/config.md).
  std::string configFile;
  std::string profile;
  bool noConfig = false;

  // hvdrun sbatch: the job script's #SBATCH lines and setup.
  struct Sbatch {
    bool submit = false;
    std::string templateFile;
    std::string jobName, partition, account, qos, time, constraint, mem, output, error;
    int nodes = 0, ntasksPerNode = 0, gpusPerNode = 0, cpusPerTask = 0;  // 0: not given
    std::vector<std::string> extraArgs;  // --sbatch-arg, verbatim
    std::vector<std::string> modules;    // module load lines
    std::vector<std::string> env;        // NAME=value exports
    std::string venv;                    // a virtualenv to activate
    std::vector<std::string> setup;      // shell lines, verbatim
  } sbatch;

  // The options that decide how ranks run (not sbatch's, not config's), as "--name" and
  // value tokens, merged from every source: what a job script passes to hvdrun.
  std::vector<std::string> launchArgs;
  // Canonical keys ("num-proc") of the options given on the command line itself.
  std::set<std::string> givenOnCommandLine;
  // horovodrun's tuning flags that hvdrun has no counterpart for (--autotune, ...): each
  // one given, as a note saying it changes nothing here and what to use instead.
  std::vector<std::string> notes;
};

// One source of settings below the command line: a config file or the environment.
// Values are text ("4", "true"); lists hold one entry per element. Keys are canonical.
struct SettingLayer {
  std::string origin;  // for messages: "config.toml", "HVDRUN_* variables"
  std::map<std::string, std::vector<std::string>> values;
};

// What a key of a config file holds.
enum class SettingKind { kFlag, kValue, kList };
struct SettingKey {
  std::string key;  // canonical: the option's first long name without dashes
  SettingKind kind;
  bool sbatchOnly;  // meaningful only to `hvdrun sbatch`
  // The option's other spellings without dashes ("np", "n" and "npernode" of num-proc and
  // nproc-per-node, "H" of hosts): not keys, but what an unknown key is first matched against,
  // so that `np = 4` is answered with 'num-proc', not with the nearest name ('mpi').
  std::vector<std::string> otherNames = {};
};

// The key `name` is one of the other names of, when it is one (keys' `spell` applied to
// both: a config file's key as it is, an HVDRUN_ variable's name from each).
template <typename Spell>
const SettingKey* settingOtherwiseNamed(const std::vector<SettingKey>& keys, const std::string& name, Spell spell) {
  for (const SettingKey& k : keys) {
    for (const std::string& other : k.otherNames) {
      if (spell(other) == name) return &k;
    }
  }
  return nullptr;
}

// Every option that a config file or an HVDRUN_* variable may set.
std::vector<SettingKey> settingKeys();

// Throws UserError(kUsage) for unknown options, missing or malformed values. Layers are
// given lowest precedence first; a key on the command line beats every layer, and a higher
// layer beats a lower one (a list is replaced whole, never merged).
Options parseOptions(const std::vector<std::string>& args, const std::vector<SettingLayer>& layers = {});

// A launch (or plan) given `hvdrun sbatch`'s options on its command line, which would
// otherwise be ignored (`hvdrun --ntasks-per-node 1 -np 2` would put both ranks on one node): srun's
// --ntasks-per-node means --nproc-per-node here; the others shape an allocation a launch does
// not ask for and are refused (UserError kUsage). From config files and HVDRUN_ variables
// they stay quiet: a profile serves both commands.
void takeSbatchOptionsInLaunch(Options& o);

// `hvdrun sbatch` takes sbatch's own short options too, as its users type them: -N, -t,
// -p, -A, -q, -C, -c, -J, -o, -e (also with the value attached: -N4, -pgpu), rewritten to
// the long ones (--nodes, --time, --partition, --account, --qos, --constraint,
// --cpus-per-task, --job-name, --job-output, --job-error). Only before the program; -p
// means --partition here (in a launch it is --ssh-port, which a job script has no use for).
inline constexpr const char* kSbatchShortOptionsHelp =
    "sbatch's short options are taken too: -N (--nodes), -t (--time), -p (--partition; not --ssh-port here), "
    "-A (--account), -q (--qos), -C (--constraint), -c (--cpus-per-task), -J (--job-name), -o (--job-output), "
    "-e (--job-error)\n";
std::vector<std::string> withSbatchShortOptions(const std::vector<std::string>& args);

}  // namespace hvd::cli
