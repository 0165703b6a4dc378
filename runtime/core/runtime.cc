// runtime/core/runtime.cc: assembling a rank: bootstrap, backends, engine.
#include "runtime/core/runtime.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "runtime/backends/backend_factory.h"
#include "runtime/common/log.h"
#include "runtime/common/rank_contract.h"
#include "runtime/core/gpu_check.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"
#include "runtime/timeline/trace_files.h"

namespace hvd {

namespace {

// A stall shutdown ends the rank with the exit code hvdrun's summary explains
// (docs/exit-codes.md), as Horovod's ends its process: its collectives can never complete,
// and a rank left running would hold its GPUs and its job. The one place the runtime
// ends a process.
void endRankStalled(const Status& stalled) {
  logMessage(LogLevel::kError, stalled.message() + "; ending this rank with exit code " +
                                   std::to_string(rank_contract::kStalledExitCode));
  std::_Exit(rank_contract::kStalledExitCode);
}

}  // namespace

Result<engine::EngineOptions> engineOptionsFrom(const EnvSnapshot& env) {
  engine::EngineOptions o;
  const std::string& cycle = env.text("HOROVOD_CYCLE_TIME");
  double ms = 0;
  auto [end, ec] = std::from_chars(cycle.data(), cycle.data() + cycle.size(), ms);
  if (cycle.empty() || ec != std::errc() || end != cycle.data() + cycle.size() || !(ms > 0) || ms > 10000) {
    return Status(Errc::kInvalidArgument, "HOROVOD_CYCLE_TIME='" + cycle + "': expected milliseconds above 0, at most 10000")
        .withHint("the default is 1 (ms); fractions such as 0.5 are fine");
  }
  o.cycleTime = std::chrono::microseconds(std::max<long long>(1, std::llround(ms * 1000)));
  o.cacheCapacity = static_cast<size_t>(env.integer("HOROVOD_CACHE_CAPACITY"));
  o.fusionThresholdBytes = static_cast<std::uint64_t>(env.integer("HOROVOD_FUSION_THRESHOLD"));
  o.stallCheck = env.integer("HOROVOD_STALL_CHECK_DISABLE") == 0;
  o.stallWarning = std::chrono::seconds(env.integer("HOROVOD_STALL_CHECK_TIME_SECONDS"));
  o.stallShutdown = std::chrono::seconds(env.integer("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"));
  o.onStallShutdown = endRankStalled;
  return o;
}

namespace {

// Peers fail when a rank dies, and hvdrun may hear of one of them first: each tells hvdrun
// whose going failed it (only started by hvdrun; best effort, it may be going too). In a
// process set the engine's peer is the set's rank, jobRanks[peer] the job's.
std::function<void(int)> peerGoneReporter(const EnvSnapshot& env, int rank, std::vector<int> jobRanks) {
  if (!env.isSet("HVD_RENDEZVOUS_ADDR") || !env.isSet("HVD_RENDEZVOUS_PORT") || !env.isSet("HVD_SECRET_KEY")) return {};
  return [host = env.text("HVD_RENDEZVOUS_ADDR"), port = static_cast<int>(env.integer("HVD_RENDEZVOUS_PORT")),
          secret = env.text("HVD_SECRET_KEY"), rank, jobRanks = std::move(jobRanks)](int peer) {
    if (!jobRanks.empty() && peer >= 0 && peer < static_cast<int>(jobRanks.size())) {
      peer = jobRanks[static_cast<size_t>(peer)];
    }
    if (auto client = rendezvous::Client::connect(host, port, secret, std::chrono::seconds(2))) {
      (void)client->set(rendezvous::peerGoneKey(rank), std::to_string(peer));
    }
  };
}

}  // namespace

Result<std::unique_ptr<Runtime>> Runtime::fromEnvironment(const EnvSnapshot& env) {
  auto level = parseLogLevel(env.text("HOROVOD_LOG_LEVEL"));
  if (!level) return level.status();
  auto options = engineOptionsFrom(env);
  if (!options) return options.status();
  long long failedIn = -2;  // the world the last join failed in
  while (true) {
    long long generation = -1;
    auto runtime = joinOnce(env, *level, *options, generation);
    // Each retry joins a newer world; one that failed in the same world again would only
    // go round (it failed for another reason).
    if (runtime || generation < 0 || generation == failedIn) return runtime;
    failedIn = generation;
    // Elastic training: a world that changed while this rank joined it (a peer left, or
    // moved on to the next world) fails the join; then the next one is joined. hvdrun
    // hears of a rank's end a moment after its peers may, so it is given a moment.
    auto changed = bootstrap::elasticWorldChanged(env, generation, std::chrono::seconds(5));
    if (!changed.isOk() || !*changed) return runtime;
    logMessage(LogLevel::kInfo, "the job's world changed while joining it (" + runtime.status().message() +
                                    "); joining the next one");
  }
}

Result<std::unique_ptr<Runtime>> Runtime::joinOnce(const EnvSnapshot& env, LogLevel level,
                                                   engine::EngineOptions engineOptions, long long& generation) {
  auto* options = &engineOptions;  // this join's copy: its rank goes into the timeline's path
  auto job = bootstrap::joinJob(env);
  if (!job) {
    // An elastic join that failed inside the world it was joining (or before it learnt it)
    // may have failed because that world was abandoned: the caller looks for a newer one.
    generation = bootstrap::lastElasticGeneration();
    return job.status();
  }
  generation = job->elasticGeneration;
  configureLog(level, job->identity.rank);
  if (!job->warning.empty()) logMessage(LogLevel::kWarning, job->warning);
  // Also for a timeline started later (start_timeline).
  options->timelineMaxBytes = static_cast<std::uint64_t>(env.integer("HVD_TIMELINE_MAX_MB")) << 20;
  options->sameClockAsRank0 = job->identity.crossRank == 0;
  // Horovod's HOROVOD_TIMELINE=DYNAMIC: no trace until start_timeline() names one.
  const std::string& trace = env.text("HOROVOD_TIMELINE") == "DYNAMIC" ? std::string() : env.text("HOROVOD_TIMELINE");
  if (!trace.empty() && generation >= 0) {
    // Trace files are named by rank and carry it on every event; in an elastic job a
    // rank's number passes to another process when the world re-forms, and one would
    // overwrite another's file.
    if (job->identity.rank == 0) {
      logMessage(LogLevel::kWarning, "HOROVOD_TIMELINE is not recorded in elastic jobs (hvdrun --min-np): ranks "
                                     "change numbers as the world re-forms; no trace is written");
    }
  } else if (!trace.empty()) {
    options->timelinePath = timeline::rankTracePath(trace, job->identity.rank);
    options->timelineMarkCycles = env.integer("HOROVOD_TIMELINE_MARK_CYCLES") == 1;
  }
  // An elastic job's ranks change with its world: hvdrun does not follow their reports.
  if (generation < 0) options->onPeerGone = peerGoneReporter(env, job->identity.rank, {});
  backends::BackendSetup setup;
  setup.rank = job->identity.rank;
  setup.size = job->identity.size;
  setup.localRank = job->identity.localRank;
  setup.localSize = job->identity.localSize;
  setup.crossRank = job->identity.crossRank;
  setup.crossSize = job->identity.crossSize;
  setup.store = job->store.get();
  setup.advertiseHost = job->advertiseHost;
  setup.secret = job->secret;
  setup.timeout = job->timeout;
  setup.env = &env;
  auto opened = backends::openBackends(setup, [&](backends::CollectiveBackend& host, backends::BackendSetup& gpu) {
    auto shared = checkRankGpus(env, job->identity, host);
    if (!shared) return shared.status();
    gpu.gpusShared = *shared;
    return Status::ok();
  });
  if (!opened) return opened.status();
  job->store.reset();  // addresses are exchanged: release the rendezvous connection
  auto runtime = create(job->identity, std::move(*opened), *options, job->launcherSession);
  if (runtime) (*runtime)->joinFacts_ = {job->advertiseHost, job->secret, job->timeout};
  return runtime;
}

Result<std::unique_ptr<Runtime>> Runtime::openProcessSet(bootstrap::Identity identity, std::vector<int> jobRanks,
                                                         const EnvSnapshot& env, const std::string& prefix,
                                                         const std::string& label, int setId) const {
  // A set's host collectives run on hvd's TCP/shared-memory backend, also in a job whose own
  // run on MPI: that backend serves MPI's world from the job's engine thread alone
  // (MPI_THREAD_SERIALIZED), and a set's engine has a thread of its own.
  auto setEnv = EnvSnapshot::read([&env](const char* name) -> const char* {
    const std::string_view variable(name);
    if (variable == "HOROVOD_CPU_OPERATIONS" || variable == "HVD_CPU_OPERATIONS") return "tcp";
    return env.isSet(variable) ? env.text(variable).c_str() : nullptr;
  });
  if (!setEnv) return setEnv.status();
  return openSet(identity, std::move(jobRanks), *setEnv, prefix, label, setId);
}

Result<std::unique_ptr<Runtime>> Runtime::openSet(bootstrap::Identity identity, std::vector<int> jobRanks,
                                                  const EnvSnapshot& env, const std::string& prefix,
                                                  const std::string& label, int setId) const {
  auto options = engineOptionsFrom(env);
  if (!options) return options.status();
  options->logContext = label;
  // hvdrun names job ranks; the set's engine knows its own.
  options->onPeerGone = peerGoneReporter(env, identity_.rank, jobRanks);
  // The set's collectives go into the job's timeline, on tracks of their own: set s's
  // numbered from s << 20 (the job's from 0), named "process set s: ...".
  options->followTimeline = engine_->sharedTimeline();
  options->timelineTrackBase = setId << 20;
  options->timelineTrackPrefix = "process set " + std::to_string(setId) + ": ";
  options->timelineRanks = jobRanks;
  std::unique_ptr<Store> store;
  if (identity.size > 1) {
    auto opened = bootstrap::processSetStore(env, joinFacts_.timeout, prefix);
    if (!opened) return opened.status();
    store = std::move(*opened);
  }
  backends::BackendSetup setup;
  setup.rank = identity.rank;
  setup.size = identity.size;
  setup.localRank = identity.localRank;
  setup.localSize = identity.localSize;
  setup.crossRank = identity.crossRank;
  setup.crossSize = identity.crossSize;
  setup.store = store.get();
  setup.advertiseHost = joinFacts_.advertiseHost;
  setup.secret = joinFacts_.secret;
  setup.timeout = joinFacts_.timeout;
  setup.env = &env;
  auto opened = backends::openBackends(setup, [&](backends::CollectiveBackend& host, backends::BackendSetup& gpu) {
    auto shared = checkRankGpus(env, identity, host);
    if (!shared) return shared.status();
    gpu.gpusShared = *shared;
    return Status::ok();
  });
  if (!opened) return opened.status();
  store.reset();
  auto runtime = create(identity, std::move(*opened), *options, launcherSession_);
  if (runtime) (*runtime)->joinFacts_ = joinFacts_;
  return runtime;
}

Result<std::unique_ptr<Runtime>> Runtime::create(bootstrap::Identity identity,
                                                 std::vector<std::unique_ptr<backends::CollectiveBackend>> backends,
                                                 engine::EngineOptions options, std::shared_ptr<void> session) {
  std::unique_ptr<Runtime> runtime(new Runtime());
  runtime->identity_ = identity;
  runtime->launcherSession_ = std::move(session);
  // Every rank's local size, learnt once at the start in one small allgather: a rank's own
  // local and cross sizes cannot tell (hosts of 1, 2 and 3 ranks: 2 x 3 hosts = 6 ranks).
  auto cpu = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b->supports(Device::kCpu); });
  if (cpu != backends.end() && identity.size > 1) {
    std::vector<std::int32_t> localSizes(static_cast<size_t>(identity.size));
    std::int32_t mine = identity.localSize;
    std::vector<size_t> four(static_cast<size_t>(identity.size), sizeof mine);
    HVD_RETURN_IF_ERROR((*cpu)->allgatherv(backends::TensorRef{&mine, sizeof mine, DataType::kUInt8, Device::kCpu}, four,
                                           localSizes.data()));
    runtime->homogeneous_ = std::all_of(localSizes.begin(), localSizes.end(), [&](auto n) { return n == mine; });
  }
  auto engine = engine::Engine::start(identity.rank, identity.size, std::move(backends), options);
  if (!engine) return engine.status();
  runtime->engine_ = std::move(*engine);
  return runtime;
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  if (engine_) engine_->shutdown();
}

}  // namespace hvd
