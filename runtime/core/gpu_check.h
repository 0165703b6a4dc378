// runtime/core/gpu_check.h: the start-up check that every rank holds its own GPU, run in
// init between connecting the host backends and opening the GPU one: each rank's report goes to
// every rank (one small allgather over the host backend), every rank reaches the same
// verdict (bootstrap/gpu_assignment.h), and a bad one fails init everywhere.
#pragma once

#include "runtime/backends/collective_backend.h"
#include "runtime/bootstrap/join.h"
#include "runtime/common/env_registry.h"

namespace hvd {

// Collective over `host`. kInvalidUsage with the problems and, on rank 0, the table of the
// offending ranks (the others point at rank 0, so the table is printed once). Asks the GPU
// driver only when CUDA_VISIBLE_DEVICES is set and not empty (pinned ranks): an unpinned
// rank picks its GPU later, and CPU-only jobs pay no cuInit. On success: whether some GPU
// is held by two ranks (hvdrun --oversubscribe-gpus), the same answer on every rank.
Result<bool> checkRankGpus(const EnvSnapshot& env, const bootstrap::Identity& identity,
                           backends::CollectiveBackend& host);

}  // namespace hvd
