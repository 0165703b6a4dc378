// runtime/backends/backend_probe.h: what a backend says about itself on this machine.
// A backend is usable only when it is compiled in AND its libraries and devices are there
// now; --check-build prints exactly this, so users can trust it on a login node.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace hvd::backends {

struct BackendProbe {
  bool usable = false;
  std::string buildVersion;  // what the build was compiled against, e.g. "Open MPI 4.1.4"
  std::string runVersion;    // what was found now; empty when nothing could be loaded
  std::string reason;        // why it is not usable; empty when usable
};

// A probe may block for as long as loading a library and asking it for a version takes
// (no processes, no network). Thread-compatible, not thread-safe: call from one thread.
using ProbeFn = BackendProbe (*)();

struct BackendEntry {
  std::string_view id;           // "tcp", "mpi", "pmix", "cuda", "nccl"
  std::string_view displayName;  // "TCP", "MPI", "PMIx", "CUDA", "NCCL"
  bool compiled = false;
  std::string_view notCompiledReason;  // set when !compiled
  ProbeFn probe = nullptr;             // set when compiled
};

// Every backend hvdrun knows of, in a fixed order, compiled in or not. Generated at
// configure time from HVD_BACKENDS: this is the one place that decides what exists.
std::span<const BackendEntry> registeredBackends();

// The entry with this id; nullptr for an unknown id.
const BackendEntry* findBackend(std::string_view id);

// Probes the entry, or explains why it is not compiled in.
BackendProbe probeBackend(const BackendEntry& entry);

// GPUs this process can use now (CUDA driver, after CUDA_VISIBLE_DEVICES); 0 without
// CUDA support compiled in, without a driver, or without devices. Blocks for cuInit.
int countLocalGpus();

}  // namespace hvd::backends
