// runtime/core/runtime.h: one rank's runtime: who it is (bootstrap), what moves its data
// (the backends, in order of preference) and the engine that runs its requests. The
// public API (hvd/hvd.h, hvd/hvd_c.h) is a facade over one default Runtime; tests build
// several in one process, ranks as threads, over any backend.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backends/collective_backend.h"
#include "runtime/bootstrap/join.h"
#include "runtime/common/env_registry.h"
#include "runtime/common/log.h"
#include "runtime/engine/engine.h"

namespace hvd {

// The engine's settings from HOROVOD_FUSION_THRESHOLD, HOROVOD_CYCLE_TIME, ...; errors name
// the variable and value.
Result<engine::EngineOptions> engineOptionsFrom(const EnvSnapshot& env);

class Runtime {
 public:
  // Joins the job this process belongs to (bootstrap/join.h), opens the backends the
  // settings ask for and starts the engine. Blocks up to HVD_TIMEOUT.
  static Result<std::unique_ptr<Runtime>> fromEnvironment(const EnvSnapshot& env);
  // Over backends already connected (tests). `session` is kept until after the engine.
  static Result<std::unique_ptr<Runtime>> create(bootstrap::Identity identity,
                                                 std::vector<std::unique_ptr<backends::CollectiveBackend>> backends,
                                                 engine::EngineOptions options, std::shared_ptr<void> session = {});
  ~Runtime();

  // A process set's runtime on one of its members: its own backends, connected through
  // hvdrun's rendezvous under `prefix` (the same on every member; bootstrap's
  // processSetStore), and its own engine. `identity` is this rank's within the set, and
  // jobRanks[i] the job's rank of the set's rank i. Blocks up to HVD_TIMEOUT; every member
  // calls it together.
  // A set's host collectives run on hvd's TCP/shared-memory backend whatever
  // HOROVOD_CPU_OPERATIONS says (MPI serves the job's engine thread alone).
  // `label` goes before the set's engine's log lines ("in process set 1 (...)"); `setId`
  // names its tracks in this rank's timeline.
  Result<std::unique_ptr<Runtime>> openProcessSet(bootstrap::Identity identity, std::vector<int> jobRanks,
                                                  const EnvSnapshot& env, const std::string& prefix,
                                                  const std::string& label, int setId) const;

  const bootstrap::Identity& identity() const { return identity_; }
  // Horovod's is_homogeneous: every host runs as many ranks. The same answer on every rank.
  bool homogeneous() const { return homogeneous_; }
  engine::Engine& engine() { return *engine_; }
  // Stops the engine (coordinated: see Engine::shutdown); idempotent.
  void shutdown();

 private:
  Runtime() = default;
  // One join and the backends over it. `generation` is set to the elastic world joined
  // (-1: not an elastic job), also when opening the backends fails.
  static Result<std::unique_ptr<Runtime>> joinOnce(const EnvSnapshot& env, LogLevel level,
                                                   engine::EngineOptions options, long long& generation);
  // openProcessSet with the set's settings.
  Result<std::unique_ptr<Runtime>> openSet(bootstrap::Identity identity, std::vector<int> jobRanks,
                                           const EnvSnapshot& env, const std::string& prefix,
                                           const std::string& label, int setId) const;
  // What the job's join learnt that a process set's backends need again.
  struct JoinFacts {
    std::string advertiseHost = "127.0.0.1";
    std::string secret;
    std::chrono::milliseconds timeout{30000};
  };
  bootstrap::Identity identity_;
  JoinFacts joinFacts_;
  bool homogeneous_ = true;
  std::shared_ptr<void> launcherSession_;  // declared before the engine: released after it
  std::unique_ptr<engine::Engine> engine_;
};

}  // namespace hvd
