// runtime/backends/backend_factory.h: the rank side of the registry. Opens the backends
// that move this rank's data, in the registry's order of preference (the first that
// supports a tensor's device runs it: Horovod's ordered list). Separate from the probes
// (backend_probe.h) so that hvdrun, which only reports on backends, links none of them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backends/collective_backend.h"
#include "runtime/common/env_registry.h"
#include "runtime/common/store.h"

namespace hvd::backends {

// What a backend needs to connect: who this rank is, where peers publish their addresses,
// and the job's settings. Valid only during openBackends.
struct BackendSetup {
  int rank = 0, size = 1, localRank = 0, localSize = 1, crossRank = 0, crossSize = 1;
  Store* store = nullptr;                    // nullptr for a world of one
  std::string advertiseHost = "127.0.0.1";  // how other ranks reach this one
  std::string secret;                        // proven on every connection
  std::chrono::milliseconds timeout{30000};  // setup, and every later call
  const EnvSnapshot* env = nullptr;          // the job's variables (never null)
  // For GPU backends: the first backend that moves host tensors (the staged path runs on
  // it; NCCL sends its unique id through it). Owned by the same runtime, outlives them.
  CollectiveBackend* hostBackend = nullptr;
  // For GPU backends: some GPU is held by two ranks (hvdrun --oversubscribe-gpus), which
  // NCCL refuses ("Duplicate GPU detected"): left to choose, the staged path runs.
  bool gpusShared = false;
};

// A backend's opener: a backend that the settings do not ask for returns a null pointer
// (not an error), so the list holds only what runs.
using OpenFn = Result<std::unique_ptr<CollectiveBackend>> (*)(const BackendSetup&);

// HOROVOD_CPU_OPERATIONS (Horovod's name) or HVD_CPU_OPERATIONS: "tcp" (default) or
// "mpi"; kInvalidArgument naming the variable otherwise.
Result<std::string> cpuOperations(const EnvSnapshot& env);

// HOROVOD_GPU_OPERATIONS (Horovod's name) or HVD_GPU_OPERATIONS: "nccl", "cpu" (the staged
// path through host memory and the CPU backend) or unset (NCCL when it loads and a GPU is
// visible, else the staged path); kInvalidArgument naming the variable otherwise.
enum class GpuOperations { kAuto, kNccl, kCpu };
Result<GpuOperations> gpuOperations(const EnvSnapshot& env);

// The GPU this process holds, for the start-up check (bootstrap/gpu_assignment.h): how
// many devices the driver shows it (-1 without CUDA compiled in or without a driver) and
// the "GPU-<uuid>" of device `ordinal` among them (hvdrun's HVD_LOCAL_GPU), or, with no
// ordinal (-1), of the one device when exactly one, and whether the driver shares that
// device's contexts through an MPS server (1), time-slices processes on it (0), or cannot
// tell (-1). Blocks for cuInit (milliseconds to a second).
struct LocalGpu {
  int driverGpus = -1;
  std::string uuid;
  int mps = -1;
};
LocalGpu inspectLocalGpu(int ordinal);

// Whether the rank side has this data or GPU backend compiled in ("tcp", "mpi", "nccl",
// "cuda": the staged GPU path); false for any other id.
bool compiledIn(std::string_view id);

// NCCL_VERSION_CODE of the nccl.h the NCCL backend was compiled against; 0 without one.
int ncclBuildVersion();

// Blocks while each chosen backend connects (up to setup.timeout). kUnavailable when the
// settings name a backend that is not compiled in or cannot load; kInvalidUsage when no
// backend moves CPU tensors. GPU backends come last; when none can run here, a stand-in
// takes GPU tensors and fails each with the reason (no driver, no device, ...).
// beforeGpu (optional) runs once the host backends are open, before the GPU backend is
// chosen: init's GPU check, which learns over the host backend whether ranks share GPUs.
using BeforeGpu = std::function<Status(CollectiveBackend& host, BackendSetup& gpuSetup)>;
Result<std::vector<std::unique_ptr<CollectiveBackend>>> openBackends(const BackendSetup& setup,
                                                                     const BeforeGpu& beforeGpu = nullptr);

}  // namespace hvd::backends
