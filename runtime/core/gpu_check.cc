// runtime/core/gpu_check.cc: gather the reports, judge them, explain.
#include "runtime/core/gpu_check.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "runtime/backends/backend_factory.h"
#include "runtime/backends/gather_bytes.h"
#include "runtime/bootstrap/gpu_assignment.h"
#include "runtime/common/log.h"

namespace hvd {
namespace {

bootstrap::GpuReport ownReport(const EnvSnapshot& env, int rank) {
  bootstrap::GpuReport report;
  report.rank = rank;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  report.host = host;
  report.plannedHost = env.text("HVD_HOSTNAME");
  // Read from the process (the rank's own, possibly set by srun or the program after
  // hvdrun): the driver honours exactly this value.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  report.visibleSet = visible != nullptr;
  report.visible = visible != nullptr ? visible : "";
  if (!report.visible.empty()) {
    // hvdrun names the rank's own among several (HVD_LOCAL_GPU: its local rank's place).
    backends::LocalGpu gpu = backends::inspectLocalGpu(static_cast<int>(env.integer("HVD_LOCAL_GPU")));
    report.driverGpus = gpu.driverGpus;
    report.gpu = gpu.uuid;
    report.mps = gpu.mps;
  }
  return report;
}

}  // namespace

Result<bool> checkRankGpus(const EnvSnapshot& env, const bootstrap::Identity& identity,
                           backends::CollectiveBackend& host) {
  std::string mine = bootstrap::encodeGpuReport(ownReport(env, identity.rank));
  std::vector<bootstrap::GpuReport> reports;
  if (identity.size == 1) {
    reports.push_back(*bootstrap::decodeGpuReport(mine));
  } else {
    std::vector<std::byte> bytes(mine.size());
    std::memcpy(bytes.data(), mine.data(), mine.size());
    std::vector<std::vector<std::byte>> perRank;
    HVD_RETURN_IF_ERROR(backends::gatherBytes(host, identity.size, std::move(bytes), perRank));
    for (size_t r = 0; r < perRank.size(); ++r) {
      auto report = bootstrap::decodeGpuReport(
          std::string(reinterpret_cast<const char*>(perRank[r].data()), perRank[r].size()));
      if (!report) return internalError("rank " + std::to_string(r) + " sent a GPU report this rank cannot read");
      reports.push_back(*report);
    }
  }
  auto verdict = bootstrap::checkGpuAssignment(reports, env.integer("HVD_OVERSUBSCRIBE_GPUS") == 1);
  if (verdict.ok()) {
    // Said once, by rank 0, which has every report. Measured on an H200 (docs/benchmarks.md):
    // a staged 8-byte allreduce of 2 ranks on one GPU took 0.29 ms without MPS, 0.02 ms with.
    if (identity.rank == 0 && !verdict.sharedWithoutMps.empty()) {
      logMessage(LogLevel::kWarning,
                 verdict.sharedWithoutMps +
                     " without MPS: the GPU switches between their processes, about 0.15 ms for each one's small "
                     "copies and other GPU work (docs/runtime.md); start MPS on the host (nvidia-cuda-mps-control -d) "
                     "before the job to share one context");
    }
    return verdict.shared;
  }
  std::string problems;
  for (const auto& p : verdict.problems) problems += (problems.empty() ? "" : "; ") + p;
  const char* hint =
      "give each rank its own GPU: hvdrun gives each local rank one unless CUDA_VISIBLE_DEVICES is already set for "
      "hvdrun itself; to share GPUs on purpose, pass hvdrun --oversubscribe-gpus (HVD_OVERSUBSCRIBE_GPUS=1)";
  if (identity.rank != 0) {
    return Status(Errc::kInvalidUsage, "the job's GPUs are not one per rank (" + problems + "); rank 0 prints the table")
        .withHint(hint);
  }
  return Status(Errc::kInvalidUsage, "the job's GPUs are not one per rank: " + problems + "\n" + verdict.table)
      .withHint(hint);
}

}  // namespace hvd
