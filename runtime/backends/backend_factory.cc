// runtime/backends/backend_factory.cc: opens the data backends the settings ask for, in
// the registry's order, checks that CPU tensors have one, then adds the GPU backend.
#include "runtime/backends/backend_factory.h"

#include <algorithm>

#include "runtime/backends/factory_registry.h"
#include "runtime/common/ascii_case.h"
#include "runtime/common/log.h"

namespace hvd::backends {
namespace {

// Takes GPU tensors when no GPU backend can run here, and fails each with the reason, so
// the user reads "no GPU visible: the NVIDIA driver ... is not installed", not a bare
// "no backend".
class NoGpuBackend final : public CollectiveBackend {
 public:
  explicit NoGpuBackend(Status why) : why_(std::move(why)) {}
  std::string_view name() const override { return "none"; }
  bool supports(Device device) const override { return device == Device::kCuda; }
  Status allreduce(const TensorRef&, ReduceOp) override { return why_; }
  Status broadcast(const TensorRef&, int) override { return why_; }
  Status allgatherv(const TensorRef&, std::span<const size_t>, void*) override { return why_; }
  Status barrier() override { return why_; }
  Result<std::byte*> scratch(size_t, const void*) override { return why_; }
  Status copy(void*, const void*, size_t) override { return why_; }
  Status useStream(void*) override { return why_; }

 private:
  Status why_;
};

Result<std::unique_ptr<CollectiveBackend>> openGpuBackend(const BackendSetup& setup) {
  auto choice = gpuOperations(*setup.env);
  if (!choice) return choice.status();
  std::string reasons;
  for (const FactoryEntry& entry : gpuBackendFactories()) {
    bool wanted = *choice == GpuOperations::kAuto || (*choice == GpuOperations::kNccl) == (entry.id == "nccl");
    if (!wanted) continue;
    bool explicitChoice = *choice != GpuOperations::kAuto;
    if (entry.id == "nccl" && setup.gpusShared && entry.open != nullptr) {
      const char* why = "ranks share a GPU (hvdrun --oversubscribe-gpus), and NCCL takes one GPU per rank";
      if (explicitChoice) {
        return Status(Errc::kInvalidUsage, std::string("HOROVOD_GPU_OPERATIONS=nccl, but ") + why)
            .withHint("give each rank its own GPU, or unset HOROVOD_GPU_OPERATIONS for the staged path");
      }
      reasons += (reasons.empty() ? "" : "; ") + std::string(why);
      continue;
    }
    if (entry.open == nullptr) {
      if (explicitChoice) {
        return Status(Errc::kUnavailable, "HOROVOD_GPU_OPERATIONS=nccl but this hvd was " + std::string(entry.notCompiledReason));
      }
      reasons += (reasons.empty() ? "" : "; ") + std::string(entry.notCompiledReason);
      continue;
    }
    auto backend = entry.open(setup);
    if (backend) return backend;
    if (explicitChoice && entry.id == "nccl") return backend.status().withContext("HOROVOD_GPU_OPERATIONS=nccl");
    logMessage(LogLevel::kDebug, std::string(entry.id) + " does not run here: " + backend.status().message());
    reasons += (reasons.empty() ? "" : "; ") + backend.status().message();
  }
  if (reasons.empty()) reasons = "no GPU backend was compiled in";
  return std::unique_ptr<CollectiveBackend>(
      new NoGpuBackend(Status(Errc::kUnavailable, "GPU tensors cannot be moved here: " + reasons)));
}

}  // namespace

bool compiledIn(std::string_view id) {
  for (auto list : {dataBackendFactories(), gpuBackendFactories()}) {
    for (const FactoryEntry& entry : list) {
      if (entry.id == id) return entry.open != nullptr;
    }
  }
  return false;
}

Result<std::string> cpuOperations(const EnvSnapshot& env) {
  for (const char* name : {"HOROVOD_CPU_OPERATIONS", "HVD_CPU_OPERATIONS"}) {
    if (!env.isSet(name)) continue;
    std::string value = asciiLower(env.text(name));
    if (value == "tcp" || value == "mpi") return value;
    // Horovod's own CPU paths: scripts and site profiles set them for Horovod; hvd's ring
    // takes their place, as hvdrun's --gloo does.
    if (value == "gloo" || value == "ccl") return std::string("tcp");
    return Status(Errc::kInvalidArgument, std::string(name) + "='" + env.text(name) + "' is not an operations backend here")
        .withHint("use tcp (hvd's own ring, the default) or mpi (Open MPI's collectives, under mpirun); Horovod's gloo "
                  "and ccl are taken as tcp");
  }
  return std::string("tcp");
}

Result<GpuOperations> gpuOperations(const EnvSnapshot& env) {
  for (const char* name : {"HOROVOD_GPU_OPERATIONS", "HVD_GPU_OPERATIONS"}) {
    if (!env.isSet(name)) continue;
    std::string value = asciiLower(env.text(name));
    if (value == "nccl") return GpuOperations::kNccl;
    if (value == "cpu" || value == "staged") return GpuOperations::kCpu;
    if (value.empty() || value == "auto") return GpuOperations::kAuto;
    return Status(Errc::kInvalidArgument, std::string(name) + "='" + env.text(name) + "' is not a GPU operations backend")
        .withHint("use nccl, or cpu (GPU tensors staged through host memory and the CPU backend); unset picks nccl when it loads");
  }
  return GpuOperations::kAuto;
}

Result<std::vector<std::unique_ptr<CollectiveBackend>>> openBackends(const BackendSetup& setup,
                                                                     const BeforeGpu& beforeGpu) {
  auto cpu = cpuOperations(*setup.env);
  if (!cpu) return cpu.status();
  if (setup.rank == 0) {
    for (const char* name : {"HOROVOD_CPU_OPERATIONS", "HVD_CPU_OPERATIONS"}) {
      const std::string value = asciiLower(setup.env->text(name));
      if (value == "gloo" || value == "ccl") {
        logMessage(LogLevel::kWarning, std::string(name) + "=" + value + ": hvd has no " + value +
                                        "; CPU tensors go through hvd's own ring (tcp) instead");
      }
      if (setup.env->isSet(name)) break;
    }
  }
  // Checked before anything connects: a typo should not cost a rendezvous.
  if (auto gpu = gpuOperations(*setup.env); !gpu) return gpu.status();
  std::vector<std::unique_ptr<CollectiveBackend>> opened;
  for (const FactoryEntry& entry : dataBackendFactories()) {
    if (entry.open == nullptr) {
      if (entry.id == *cpu) {
        return Status(Errc::kUnavailable, "HOROVOD_CPU_OPERATIONS=" + *cpu + " but this hvd was " +
                                              std::string(entry.notCompiledReason));
      }
      continue;
    }
    auto backend = entry.open(setup);
    if (!backend) return backend.status();  // each opener names itself in its errors
    if (*backend) opened.push_back(std::move(*backend));
  }
  auto host = std::find_if(opened.begin(), opened.end(), [](const auto& b) { return b->supports(Device::kCpu); });
  if (host == opened.end()) return invalidUsage("no backend moves CPU tensors (HOROVOD_CPU_OPERATIONS=" + *cpu + ")");
  BackendSetup gpuSetup = setup;
  gpuSetup.hostBackend = host->get();
  if (beforeGpu) HVD_RETURN_IF_ERROR(beforeGpu(**host, gpuSetup));
  auto gpu = openGpuBackend(gpuSetup);
  if (!gpu) return gpu.status();
  opened.push_back(std::move(*gpu));
  return opened;
}

}  // namespace hvd::backends
