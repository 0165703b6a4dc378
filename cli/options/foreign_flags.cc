// cli/options/foreign_flags.cc: the tables.
#include "cli/options/foreign_flags.h"

namespace hvd::cli {
namespace {

// horovodrun's flags that hvdrun has under its own names (--nics, ...) are second names of
// its options. These are the rest. Tuning that hvdrun has no counterpart for is accepted,
// so a ported command line runs, with a note; what a fixed set of ranks cannot honour
// (elastic training) is refused, saying so.
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
}  // namespace

std::span<const HorovodrunFlag> ignoredForeignFlags() { return kIgnoredHorovodrunFlags; }
std::span<const char* const> defaultForeignFlags() { return kDefaultHorovodrunFlags; }

const RefusedFlag* refusedForeignFlag(std::string_view name) {
  for (const RefusedFlag& flag : kRefusedLauncherFlags) {
    if (name == flag.name) return &flag;
  }
  return nullptr;
}

}  // namespace hvd::cli
