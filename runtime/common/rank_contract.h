// runtime/common/rank_contract.h: what hvdrun and a rank agree on, declared once for both
// sides: the names of the variables hvdrun gives every rank (the runtime's registry reads
// its own under these names), those its launchers pass to their task shims and host agents,
// and the exit code a rank's runtime ends a stalled rank with. docs/environment.md lists
// them; docs/architecture.md says where each is written and read.
#pragma once

#include <string>
#include <string_view>

namespace hvd::rank_contract {

// A rank's identity, in hvd's names (the runtime reads these).
inline constexpr std::string_view kRank = "HVD_RANK";
inline constexpr std::string_view kSize = "HVD_SIZE";
inline constexpr std::string_view kLocalRank = "HVD_LOCAL_RANK";
inline constexpr std::string_view kLocalSize = "HVD_LOCAL_SIZE";
inline constexpr std::string_view kCrossRank = "HVD_CROSS_RANK";
inline constexpr std::string_view kCrossSize = "HVD_CROSS_SIZE";
inline constexpr std::string_view kHostname = "HVD_HOSTNAME";

// The same identity in Horovod's names, which Horovod's own programs read.
inline constexpr std::string_view kHorovodRank = "HOROVOD_RANK";
inline constexpr std::string_view kHorovodSize = "HOROVOD_SIZE";
inline constexpr std::string_view kHorovodLocalRank = "HOROVOD_LOCAL_RANK";
inline constexpr std::string_view kHorovodLocalSize = "HOROVOD_LOCAL_SIZE";
inline constexpr std::string_view kHorovodCrossRank = "HOROVOD_CROSS_RANK";
inline constexpr std::string_view kHorovodCrossSize = "HOROVOD_CROSS_SIZE";
inline constexpr std::string_view kHorovodHostname = "HOROVOD_HOSTNAME";

// And in torchrun's, which torch.distributed's env:// and the libraries over it read.
inline constexpr std::string_view kTorchRank = "RANK";
inline constexpr std::string_view kTorchWorldSize = "WORLD_SIZE";
inline constexpr std::string_view kTorchLocalRank = "LOCAL_RANK";
inline constexpr std::string_view kTorchLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kTorchGroupRank = "GROUP_RANK";
inline constexpr std::string_view kTorchGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr std::string_view kTorchRoleRank = "ROLE_RANK";
inline constexpr std::string_view kTorchRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr std::string_view kTorchRoleName = "ROLE_NAME";
inline constexpr std::string_view kTorchRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr std::string_view kTorchMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr std::string_view kTorchRunId = "TORCHELASTIC_RUN_ID";
inline constexpr std::string_view kTorchErrorFile = "TORCHELASTIC_ERROR_FILE";
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";
inline constexpr std::string_view kMasterPort = "MASTER_PORT";

// Where the job's rendezvous is, and the secret that admits a rank to it and to its peers.
inline constexpr std::string_view kRendezvousAddr = "HVD_RENDEZVOUS_ADDR";
inline constexpr std::string_view kRendezvousPort = "HVD_RENDEZVOUS_PORT";
inline constexpr std::string_view kSecretKey = "HVD_SECRET_KEY";

// GPUs, network and TensorFlow.
inline constexpr std::string_view kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
inline constexpr std::string_view kLocalGpu = "HVD_LOCAL_GPU";
inline constexpr std::string_view kOversubscribeGpus = "HVD_OVERSUBSCRIBE_GPUS";
inline constexpr std::string_view kNetworkInterface = "HVD_NETWORK_INTERFACE";
inline constexpr std::string_view kNcclSocketIfname = "NCCL_SOCKET_IFNAME";
inline constexpr std::string_view kTfConfig = "TF_CONFIG";

// Preemption: the flag file hvdrun creates when the notice arrives, and the notice's signal.
inline constexpr std::string_view kPreemptFile = "HVD_PREEMPT_FILE";
inline constexpr std::string_view kPreemptSignal = "HVD_PREEMPT_SIGNAL";

// Elastic training (hvdrun --min-np).
inline constexpr std::string_view kElasticWorker = "HVD_ELASTIC_WORKER";
inline constexpr std::string_view kElasticAfter = "HVD_ELASTIC_AFTER";
inline constexpr std::string_view kElasticTimeout = "HVD_ELASTIC_TIMEOUT";
inline constexpr std::string_view kHorovodElastic = "HOROVOD_ELASTIC";

// The runtime's settings hvdrun's options give every rank (horovodrun's names where Horovod
// has the setting). HVD_TIMEOUT is read by hvdrun too, to time what its ranks time by it.
inline constexpr std::string_view kTimeout = "HVD_TIMEOUT";
inline constexpr std::string_view kFusionThreshold = "HOROVOD_FUSION_THRESHOLD";
inline constexpr std::string_view kCycleTime = "HOROVOD_CYCLE_TIME";
inline constexpr std::string_view kCacheCapacity = "HOROVOD_CACHE_CAPACITY";
inline constexpr std::string_view kStallCheckDisable = "HOROVOD_STALL_CHECK_DISABLE";
inline constexpr std::string_view kStallCheckTime = "HOROVOD_STALL_CHECK_TIME_SECONDS";
inline constexpr std::string_view kStallShutdownTime = "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS";
inline constexpr std::string_view kTimeline = "HOROVOD_TIMELINE";
inline constexpr std::string_view kTimelineMarkCycles = "HOROVOD_TIMELINE_MARK_CYCLES";
inline constexpr std::string_view kTimelineMaxMb = "HVD_TIMELINE_MAX_MB";
inline constexpr std::string_view kLogLevel = "HOROVOD_LOG_LEVEL";

// From hvdrun's launchers to their task shims (`hvdrun exec-rank` under srun and mpirun),
// never to a rank: the plan's hosts and GPUs, the names of the runtime variables that every
// rank gets, and that the job is elastic.
inline constexpr std::string_view kPlanHosts = "HVD_PLAN_HOSTS";
inline constexpr std::string_view kPlanGpus = "HVD_PLAN_GPUS";
inline constexpr std::string_view kPlanRuntimeVariables = "HVD_PLAN_RUNTIME_VARIABLES";
inline constexpr std::string_view kPlanElastic = "HVD_ELASTIC";

// "NAME=value", as a process's environment holds it.
inline std::string assignment(std::string_view name, std::string_view value) {
  std::string kv;
  kv.reserve(name.size() + 1 + value.size());
  kv.append(name).append(1, '=').append(value);
  return kv;
}

// Whether `kv` ("NAME=value") assigns `name`.
inline bool assigns(std::string_view kv, std::string_view name) {
  return kv.size() > name.size() && kv.substr(0, name.size()) == name && kv[name.size()] == '=';
}

// A rank's runtime ends the rank with this code once a collective has waited past
// HOROVOD_STALL_SHUTDOWN_TIME_SECONDS for ranks that never submitted it; hvdrun's summary
// explains the code (docs/exit-codes.md).
inline constexpr int kStalledExitCode = 119;

}  // namespace hvd::rank_contract
