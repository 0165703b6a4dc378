// runtime/bootstrap/gpu_assignment.h: the start-up check that every rank holds its own GPU.
// Each rank reports what it was given and what the driver shows it; rank reports are
// exchanged once at init and judged here, as a pure function, so that "every process on
// GPU 0" (Horovod's issue 2625) fails the job at start with one table instead of costing
// hours of slow or wrong training.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hvd::bootstrap {

struct GpuReport {
  int rank = 0;
  std::string host;            // gethostname()
  std::string plannedHost;     // HVD_HOSTNAME: where hvdrun's plan put the rank; "" unknown
  bool visibleSet = false;     // CUDA_VISIBLE_DEVICES is set
  std::string visible;         // its value
  int driverGpus = -1;         // devices the driver shows the rank; -1 not asked (no driver,
                               // or CUDA_VISIBLE_DEVICES unset: the rank picks its GPU later)
  std::string gpu;             // "GPU-<uuid>" when exactly one GPU is visible, else ""
  int mps = -1;                // 1: the driver shares the GPU's contexts through MPS, 0: it
                               // time-slices processes, -1: not known
};

// Tab-separated, one report per line; decode returns nullopt for text it cannot read.
std::string encodeGpuReport(const GpuReport& report);
std::optional<GpuReport> decodeGpuReport(const std::string& text);

struct GpuVerdict {
  std::vector<std::string> problems;  // one sentence each; empty: all is well
  std::string table;                  // the offending ranks' reports, aligned; "" when fine
  bool shared = false;                // some GPU is held by two ranks (allowed or not)
  // "ranks 0, 1 share GPU-a on n1; ..." for shared GPUs whose ranks run without MPS: each
  // process waits for the GPU to switch to it (docs/runtime.md), worth a warning.
  std::string sharedWithoutMps;
  bool ok() const { return problems.empty(); }
};

// Finds: two ranks on one GPU (unless allowShared: hvdrun --oversubscribe-gpus), a rank
// given more GPUs in CUDA_VISIBLE_DEVICES than the driver shows it (a planned GPU that is
// missing, or a bad index), and ranks that the plan puts on one host but that run on
// different hosts. Reports may come in any order.
GpuVerdict checkGpuAssignment(std::span<const GpuReport> reports, bool allowShared);

}  // namespace hvd::bootstrap
