// runtime/bootstrap/join.h: joining a job, the first thing a rank does: who it is (rank,
// size, local and cross ranks), and a Store through which its backends find their peers.
// Three ways in: hvdrun's rendezvous (HVD_* variables), a PMIx launcher (mpirun, srun
// --mpi=pmix), or alone (a world of one).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/common/env_registry.h"
#include "runtime/common/status.h"
#include "runtime/common/store.h"

namespace hvd::bootstrap {

struct Identity {
  int rank = 0, size = 1, localRank = 0, localSize = 1, crossRank = 0, crossSize = 1;
};

struct JoinedJob {
  Identity identity;
  // Where backends publish and read addresses; null for a world of one. Only for setting
  // up: the runtime releases it once its backends are connected.
  std::unique_ptr<Store> store;
  std::string advertiseHost = "127.0.0.1";  // how other ranks reach this one
  std::string secret;                        // the job's, proven on every link
  std::chrono::milliseconds timeout{30000};  // HVD_TIMEOUT
  // The launcher's connection (PMIx); releasing the last copy says goodbye, which mpirun
  // requires before a rank exits. Keep it as long as the backends.
  std::shared_ptr<void> launcherSession;
  // A warning for the runtime to log once logging knows the rank (e.g. a lone rank that
  // is one of several srun tasks); empty when there is none.
  std::string warning;
  // Elastic training (HVD_ELASTIC_WORKER): the generation of the world joined; -1 otherwise.
  long long elasticGeneration = -1;
};

// Blocks until the job is joined or the timeout passes. Errors name the variable, the
// server or the launcher that failed; kInvalidUsage for HVD_SIZE > 1 with no way to find
// the other ranks.
Result<JoinedJob> joinJob(const EnvSnapshot& env);

// Elastic training: whether hvdrun has published a world after `generation`, waiting up to
// `wait` for one (hvdrun hears of a rank's end a moment after its peers may); false when it
// ended the job instead. A join or a collective that failed in that generation failed
// because the world changed under it. With a wait of 0 it only looks (the key is there),
// and an ended job counts as changed: the join that follows says why it ended.
Result<bool> elasticWorldChanged(const EnvSnapshot& env, long long generation, std::chrono::milliseconds wait);

// Elastic training: the generation of the world this process last joined (-1 before its
// first join, and outside elastic jobs).
long long lastElasticGeneration();

// A Store for a process set's backends, after init released the job's: hvdrun's rendezvous
// again, every key under `prefix` (the same on each member). kUnavailable for a job hvdrun
// did not start (mpirun or srun --mpi=pmix alone), whose launcher's store is gone by then.
Result<std::unique_ptr<Store>> processSetStore(const EnvSnapshot& env, std::chrono::milliseconds timeout,
                                               const std::string& prefix);

}  // namespace hvd::bootstrap
