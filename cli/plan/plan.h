// cli/plan/plan.h: one plan for a job, whatever described the resources (-H, a hostfile,
// the Slurm allocation, a PBS or LSF allocation, or this machine): every rank's host, local and cross ranks, GPUs,
// TF role and the environment it starts with. Launchers execute it; --dry-run prints it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/plan/cpu_binding.h"
#include "cli/plan/rank_plan.h"
#include "runtime/common/status.h"
#include "slurm/environment.h"

namespace hvd::cli {

enum class Role { kWorker, kChief, kPs, kEvaluator };
std::string_view roleName(Role role);

enum class HostSource { kLocal, kHostList, kHostfile, kSlurm, kPbs, kLsf };

struct PlanRequest {
  int numProc = 0;  // -np; 0: every slot
  int ranksPerHost = 0;  // --nproc-per-node: exactly this many on every host (0: -np's rule)
  // torchrun's --nproc-per-node gpu (a rank per GPU of each host, GPUs per rank at a time),
  // cpu (per CPU of this machine) or auto (gpu where a host shows GPUs, else cpu); "": none.
  std::string ranksPerHostWord;
  int nnodes = 0;        // --nnodes: the number of hosts there must be (0: any)
  std::string hostList;                    // -H
  std::string hostfilePath, hostfileText;  // --hostfile (read by the caller)
  std::string pbsNodefileText;             // PBS_NODEFILE's lines, when the environment names one (read by the caller)
  bool noSlurm = false;
  int gpusPerRank = 1;
  bool noGpu = false;
  bool oversubscribeGpus = false;
  bool tfConfig = false;
  int tfPs = 0;
  bool tfChief = false;
  bool tfEvaluator = false;
  int tfPortBase = 8888;
  std::string networkInterface;
  BindTo bindTo = BindTo::kNone;
  std::vector<std::string> runtimeVariables;  // "HOROVOD_...=value", for every rank
};

// What the caller learned about this machine, so that planning itself does no I/O.
// One host's GPUs and the CPUs hvdrun may use there, as its own hvdrun counts them (`hvdrun
// host-agent --count` over ssh), for --nproc-per-node gpu, cpu or auto on -H hosts.
struct HostCounts {
  int gpus = 0;
  int cpus = 1;
  bool operator==(const HostCounts&) const = default;
};

struct MachineFacts {
  std::string hostname;
  int localGpuCount = 0;  // visible CUDA devices (0 without a driver)
  int localCpuCount = 1;  // CPUs this process may use (--nproc-per-node cpu)
  int freePort = 0;       // a free TCP port here, for MASTER_PORT outside Slurm
  int rendezvousPort = 0; // another free port here, for hvdrun's rendezvous server
  // Each Slurm node's GPU indices (`scontrol show job -d`); empty when not asked or unknown.
  std::map<std::string, std::vector<std::string>> slurmNodeGpus;
  // Each -H or hostfile host but this machine, by name, when --nproc-per-node gpu, cpu or
  // auto asks; empty otherwise.
  std::map<std::string, HostCounts> sshHostCounts;
};

struct HostPlan {
  std::string host;
  int slots = 0;
  int ranks = 0;                     // ranks placed here
  bool slotsGiven = true;            // false: -H or a hostfile named it without a count (1)
  bool devicesKnown = false;         // false: devices are index guesses (horovodrun's rule)
  std::vector<std::string> devices;  // the GPUs this host offers, in order
  bool gpusByLocalRank = false;      // its ranks see its GPUs of the job, each's own at its local rank
  bool local = false;                // this machine
  int cpus = 0;                      // the CPUs Slurm gave the job here (SLURM_JOB_CPUS_PER_NODE); 0: not said
};

struct RankPlan {
  RankAssignment where;
  std::vector<std::string> gpus;  // for CUDA_VISIBLE_DEVICES; empty: no GPU pinning
  std::vector<int> gpuSlots;      // positions of gpus in the host's device list, so a launcher
                                  // on the node can map them onto what it sees there
  // What CUDA_VISIBLE_DEVICES lists (its own gpus, or every rank's on its host: see
  // plan_builder.cc assignGpus), and where its first own GPU is in that list (HVD_LOCAL_GPU).
  std::vector<std::string> visibleGpus;
  int localGpu = 0;
  bool hideGpus = false;          // a role without GPUs on a GPU host: CUDA_VISIBLE_DEVICES=""
  Role role = Role::kWorker;
  int roleIndex = 0;  // index within its TF role
  int tfPort = 0;     // 0 without --tf-config
};

struct Plan {
  HostSource source = HostSource::kLocal;
  std::string sourceDetail;  // "Slurm job 42", "-H a:2,b:2", "hostfile ./hosts", "this machine"
  std::string slurmJobId;    // set for kSlurm
  std::vector<HostPlan> hosts;
  std::vector<RankPlan> ranks;
  std::string masterAddr;
  int masterPort = 0;
  // Where hvdrun's rendezvous server (on the launching machine) listens for its ranks.
  // The job's secret is not part of the plan: it is made at launch and never printed.
  std::string rendezvousAddr;
  int rendezvousPort = 0;
  bool tfConfig = false;
  std::string networkInterface;
  BindTo bindTo = BindTo::kNone;  // --bind-to: hvdrun pins local ranks; srun and mpirun are told
  std::vector<std::string> runtimeVariables;  // "HOROVOD_...=value" from the engine options
  // --max-restarts, and which start of the job this is (0: the first): torchrun's
  // TORCHELASTIC_MAX_RESTARTS and TORCHELASTIC_RESTART_COUNT, so a program can tell a
  // restart and resume from its checkpoint.
  int maxRestarts = 0;
  int restartCount = 0;
};

// Builds the plan; kInvalidArgument/kInvalidUsage name the offending option or token.
Result<Plan> buildPlan(const PlanRequest& request, const slurm::Environment& env, const MachineFacts& facts);

// The -H or hostfile hosts other than this machine, when --nproc-per-node gpu, cpu or auto
// needs their counts (MachineFacts::sshHostCounts); empty when it does not, or when the list
// does not parse (buildPlan then says why).
std::vector<std::string> hostsToCount(const PlanRequest& request, const MachineFacts& facts);

// The variables the plan gives rank r, "NAME=value", in a fixed order: its identity (who it
// is, where the job's master and rendezvous are), its GPUs, then the plan's settings (the
// network interface, TF_CONFIG, the runtime's variables). What a launcher adds beside them
// (the job's secret, elastic and thread variables) is supervise/rank_environment.h's.
std::vector<std::string> planEnvironment(const Plan& plan, const RankPlan& rank);
std::vector<std::string> planIdentityVariables(const Plan& plan, const RankPlan& rank);
std::vector<std::string> planSettingVariables(const Plan& plan, const RankPlan& rank);

// The rank's CUDA_VISIBLE_DEVICES and HVD_LOCAL_GPU as the plan (or a host agent) gave them
// ("CUDA_VISIBLE_DEVICES=" alone for a role without GPUs on a GPU host); none without.
std::vector<std::string> gpuVariables(const RankPlan& rank);
// `env` without CUDA_VISIBLE_DEVICES and HVD_LOCAL_GPU ("NAME=value" entries).
std::vector<std::string> withoutGpuVariables(std::vector<std::string> env);

// The TF_CONFIG JSON of a rank (only meaningful when plan.tfConfig).
std::string tfConfigJson(const Plan& plan, const RankPlan& rank);

// A ParameterServerStrategy job (--tf-ps with --tf-chief) ends when its chief does: the
// chief's rank, or nullopt for every other kind of job.
std::optional<int> parameterServerChief(const Plan& plan);

}  // namespace hvd::cli
