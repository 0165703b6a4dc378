// runtime/common/env_registry.cc: the table, and strict parsing (atoi read "3x" as 3 and
// "x" as 0, which let a typo turn every rank into rank 0). The variables hvdrun gives its
// ranks are named by rank_contract.h, which hvdrun writes them by.
#include "runtime/common/env_registry.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "runtime/common/rank_contract.h"

namespace hvd {
namespace {

constexpr long long kMaxRanks = 1 << 24;

const EnvVar kVariables[] = {
    {rank_contract::kRank, "0", "this rank, 0 .. HVD_SIZE-1", EnvKind::kInteger, 0, kMaxRanks - 1},
    {rank_contract::kSize, "1", "number of ranks; unset: a world of one", EnvKind::kInteger, 1, kMaxRanks},
    {rank_contract::kLocalRank, "0", "rank among those on the same host", EnvKind::kInteger, 0, kMaxRanks - 1},
    {rank_contract::kLocalSize, "1", "ranks on this host", EnvKind::kInteger, 1, kMaxRanks},
    {rank_contract::kCrossRank, "0", "index of this rank's host", EnvKind::kInteger, 0, kMaxRanks - 1},
    {rank_contract::kCrossSize, "1", "number of hosts", EnvKind::kInteger, 1, kMaxRanks},
    {rank_contract::kElasticWorker, "-1", "elastic training (hvdrun --min-np): this process's worker number, which stays while its rank changes with the world; -1: not elastic", EnvKind::kInteger, -1, kMaxRanks - 1},
    {rank_contract::kElasticAfter, "-1", "elastic training: a worker hvdrun added to a running job first joins the world after this generation; -1: the job's first", EnvKind::kInteger, -1, 1LL << 40},
    {rank_contract::kElasticTimeout, "600", "elastic training: seconds init() waits for the other ranks of the world it joins (hvdrun --elastic-timeout)", EnvKind::kInteger, 1, 86400},
    {rank_contract::kHostname, "", "the name other ranks reach this one by", EnvKind::kText},
    {rank_contract::kRendezvousAddr, "", "hvdrun's rendezvous server", EnvKind::kText},
    {rank_contract::kRendezvousPort, "", "its port", EnvKind::kInteger, 1, 65535},
    {rank_contract::kSecretKey, "", "the job's secret, proven to the server and to ring peers", EnvKind::kText},
    {"SLURM_NTASKS", "", "read only to warn when a rank alone in its world is one of several tasks srun started", EnvKind::kText},
    {rank_contract::kTorchWorldSize, "", "read only to refuse init in one of several copies torchrun started, which would each train alone (hvd's ranks do not join through torchrun's rendezvous)", EnvKind::kText},
    {rank_contract::kTorchLocalWorldSize, "", "read only for that refusal's hint (torchrun's --nproc-per-node)", EnvKind::kText},
    {rank_contract::kMasterAddr, "", "read only to tell torchrun's copies (torch's env:// rendezvous) from other programs setting WORLD_SIZE", EnvKind::kText},
    {rank_contract::kNetworkInterface, "", "the interface ring traffic uses (its IPv4 address is advertised)", EnvKind::kText},
    {"HOROVOD_CPU_OPERATIONS", "tcp", "tcp (hvd's ring) or mpi (Open MPI's collectives; ranks started by mpirun); Horovod's gloo and ccl run on the ring", EnvKind::kText},
    {"HVD_CPU_OPERATIONS", "tcp", "the same, hvd's name; HOROVOD_CPU_OPERATIONS wins when both are set", EnvKind::kText},
    {"HOROVOD_GPU_OPERATIONS", "", "nccl, or cpu (GPU tensors staged through host memory and the CPU backend); unset: nccl when it loads and a GPU is visible", EnvKind::kText},
    {"HVD_GPU_OPERATIONS", "", "the same, hvd's name; HOROVOD_GPU_OPERATIONS wins when both are set", EnvKind::kText},
    {rank_contract::kLocalGpu, "-1", "this rank's own GPU among those CUDA_VISIBLE_DEVICES shows it (hvdrun: its local rank when each rank has one, else 0); the start-up check reads that one's identity; -1: unknown", EnvKind::kInteger, -1, 1 << 16},
    {rank_contract::kOversubscribeGpus, "0", "1: ranks may share a GPU (set by hvdrun --oversubscribe-gpus); 0: init fails when two ranks hold one", EnvKind::kInteger, 0, 1},
    {"HVD_SHARED_MEMORY", "1", "1: peers on the same host exchange through shared memory; 0: always TCP", EnvKind::kInteger, 0, 1},
    {"HVD_CONTENTION_PIN", "1", "1: where a host's ranks outnumber its cores and other work keeps them busy, the thread running a rank's collectives is held on one CPU (local rank mod the rank's CPUs) until the contention has gone; 0: never", EnvKind::kInteger, 0, 1},
    {"HVD_ALLREDUCE_ALGORITHM", "auto", "auto (halving-doubling on a power-of-two rank count, else the ring; folded recursive doubling for small buffers from 5 ranks), ring or halving-doubling", EnvKind::kText},
    {rank_contract::kTimeout, "30", "seconds for joining the job, and for every later wait in a collective during which nothing arrives (time the process was stopped does not count)", EnvKind::kInteger, 1, 86400},
    {rank_contract::kFusionThreshold, "134217728", "bytes: ready allreduces of one type and op are packed into one collective up to this size; 0: no fusion", EnvKind::kInteger, 0, 1ll << 40},
    {rank_contract::kCycleTime, "1", "milliseconds between the engine's negotiation cycles (a decimal, e.g. 0.5)", EnvKind::kText},
    {rank_contract::kCacheCapacity, "1024", "named requests remembered so that repeating them costs one byte each to negotiate; 0: no cache", EnvKind::kInteger, 0, 1 << 16},
    {rank_contract::kStallCheckDisable, "0", "1: never look for requests some ranks submitted and others did not", EnvKind::kInteger, 0, 1},
    {rank_contract::kStallCheckTime, "60", "rank 0 warns, naming the missing ranks, about requests waiting this long for them", EnvKind::kInteger, 1, 604800},
    {rank_contract::kStallShutdownTime, "0", "with a value, every rank ends with exit code 119 once a request has waited this long for missing ranks; 0: never", EnvKind::kInteger, 0, 604800},
    {rank_contract::kTimeline, "", "a Chrome trace of every collective: rank 0 writes this file, rank r the same name with .rank<r> before the extension; DYNAMIC: none until start_timeline()", EnvKind::kText},
    {rank_contract::kTimelineMarkCycles, "0", "1: mark each engine cycle in the timeline", EnvKind::kInteger, 0, 1},
    {rank_contract::kTimelineMaxMb, "64", "each rank's timeline stops growing at this many MiB, saying so in a last event", EnvKind::kInteger, 1, 1 << 20},
    {rank_contract::kLogLevel, "warning", "trace, debug, info, warning, error or fatal: what the runtime prints to stderr", EnvKind::kText},
    {rank_contract::kPreemptFile, "", "created by hvdrun when the preemption notice arrives", EnvKind::kText},
    {rank_contract::kPreemptSignal, "", "USR1 or USR2: the notice's signal, handled when the program does not", EnvKind::kText},
};

}  // namespace

std::span<const EnvVar> runtimeVariables() { return kVariables; }

Result<EnvSnapshot> EnvSnapshot::read(const Lookup& lookup) {
  EnvSnapshot snapshot;
  for (const EnvVar& v : kVariables) {
    std::string name(v.name);
    snapshot.fallbacks_[name] = std::string(v.fallback);
    const char* raw = lookup(name.c_str());
    if (raw == nullptr) continue;
    std::string value = raw;
    if (v.kind == EnvKind::kInteger) {
      long long parsed = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size() || parsed < v.minimum ||
          parsed > v.maximum) {
        return Status(Errc::kInvalidArgument, name + "='" + value + "': expected a whole number from " +
                                                  std::to_string(v.minimum) + " to " + std::to_string(v.maximum))
            .withHint("hvdrun sets it; unset it to run alone, or fix the value");
      }
    }
    snapshot.values_[name] = std::move(value);
  }
  return snapshot;
}

Result<EnvSnapshot> EnvSnapshot::fromProcess() {
  return read([](const char* name) -> const char* { return std::getenv(name); });
}

const EnvVar& EnvSnapshot::declared(std::string_view name) const {
  for (const EnvVar& v : kVariables) {
    if (v.name == name) return v;
  }
  std::fprintf(stderr, "hvd: internal error: %.*s is not declared in env_registry.cc\n", static_cast<int>(name.size()),
               name.data());
  std::abort();
}

bool EnvSnapshot::isSet(std::string_view name) const {
  declared(name);
  return values_.find(name) != values_.end();
}

long long EnvSnapshot::integer(std::string_view name) const {
  const EnvVar& v = declared(name);
  const std::string& text = this->text(name);
  long long parsed = 0;
  std::from_chars(text.data(), text.data() + text.size(), parsed);
  return text.empty() ? v.minimum : parsed;
}

const std::string& EnvSnapshot::text(std::string_view name) const {
  declared(name);
  auto it = values_.find(name);
  return it != values_.end() ? it->second : fallbacks_.find(name)->second;
}

}  // namespace hvd
