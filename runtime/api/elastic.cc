// runtime/api/elastic.cc: whether an elastic job's world has moved on. Rank 0 asks
// hvdrun's rendezvous whether a world after this one exists; an allreduce gives every rank
// its answer, so all of them leave at the same step (one asking alone could leave its
// peers waiting in a collective).
#include <chrono>
#include <cstdint>

#include "hvd/hvd.h"
#include "runtime/bootstrap/join.h"
#include "runtime/common/env_registry.h"

namespace hvd {

Result<bool> elasticWorldChanged() {
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status();
  // The same answer on every rank of a job: no collective outside elastic jobs.
  if (env->integer("HVD_ELASTIC_WORKER") < 0 || !env->isSet("HVD_RENDEZVOUS_ADDR")) return false;
  std::int32_t changed = 0;
  if (rank() == 0) {
    auto asked = bootstrap::elasticWorldChanged(*env, bootstrap::lastElasticGeneration(), std::chrono::milliseconds(0));
    if (!asked) return asked.status().withContext("asking hvdrun whether the job's world changed");
    changed = *asked ? 1 : 0;
  }
  HVD_RETURN_IF_ERROR(allreduce(&changed, 1, DataType::kInt32, ReduceOp::kMax));
  return changed != 0;
}

}  // namespace hvd
