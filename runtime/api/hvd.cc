// runtime/api/hvd.cc: the public C++ API as a facade over one default Runtime. The
// pointer is swapped atomically, so calls from any thread see a whole Runtime or none,
// and shutdown() cannot pull it from under a call in progress.
#include "hvd/hvd.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "runtime/api/preemption.h"
#include "runtime/api/process_set_table.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/core/runtime.h"
#include "runtime/timeline/trace_files.h"

namespace hvd {
namespace {

// C++20's atomic shared_ptr: the free std::atomic_load/store overloads it replaces are
// deprecated (and gone in C++26).
std::atomic<std::shared_ptr<Runtime>> defaultRuntime;
std::mutex initMutex;  // init() and shutdown() one at a time

std::shared_ptr<Runtime> current() { return defaultRuntime.load(); }

std::atomic<bool> shutDown{false};  // shutdown() ended a runtime and no init() has made another
std::atomic<bool> joinedBefore{false};  // an init() of this process joined the job

Status notInitialized() {
  if (shutDown.load(std::memory_order_relaxed)) {
    return Status(Errc::kInvalidUsage, "the runtime was shut down (hvd.shutdown()) before this call")
        .withHint("make collectives before shutdown(), or call init() again to rejoin the job");
  }
  return Status(Errc::kInvalidUsage, "hvd::init() has not been called (or failed)");
}

// A process forked after init() (os.fork, a fork-started worker) inherits its parent's
// runtime: the same connections, shared memory and peers, but none of its threads. Its
// calls would pair with the peers' next ones in the parent's place (wrong sums, a hang),
// and its exit's shutdown() would negotiate over them too. So it keeps the identity
// (rank() and size() seed a DataLoader worker) and nothing else: set in the child by a
// pthread_atfork handler, to the parent's pid, while a runtime is live.
std::atomic<bool> runtimeLive{false};
std::atomic<int> forkedFrom{0};

void markForkedChild() {
  if (runtimeLive.load(std::memory_order_relaxed)) forkedFrom.store(static_cast<int>(::getppid()));
}

Status forkedAfterInit() {
  return Status(Errc::kInvalidUsage,
                "this process (pid " + std::to_string(::getpid()) + ") was forked from pid " +
                    std::to_string(forkedFrom.load()) +
                    " after hvd.init(); it shares that process's connections to the other ranks but none of its "
                    "threads, so its collectives are refused: make them in the process that called hvd.init() "
                    "(a forked worker may still read rank() and size())");
}

// The runtime, when this process may make collectives with it.
Result<std::shared_ptr<Runtime>> usable() {
  auto rt = current();
  if (!rt) return notInitialized();
  if (forkedFrom.load(std::memory_order_relaxed) != 0) return forkedAfterInit();
  return rt;
}

// Process sets (addProcessSet): the job's runtime is set 0; the others are in the book.
api::ProcessSetTable processSets;
std::mutex addMutex;  // adds and removes one at a time: each is a collective over the job

// The runtime that runs the calls of `processSet` on this rank.
Result<std::shared_ptr<Runtime>> usable(int processSet) {
  auto rt = usable();
  if (!rt || processSet == 0) return rt;
  return processSets.runtimeFor(processSet, (*rt)->identity().rank);
}

// A set's failures name its ranks as its engine numbers them: said with the job's.
Status inSet(Status s, int processSet) { return processSets.labelled(std::move(s), processSet); }
template <typename T>
Result<T> inSet(Result<T> r, int processSet) {
  if (r) return r;
  return inSet(r.status(), processSet);
}

// A broadcast's root is a job rank (Horovod's convention); the set's engine counts its own.
Result<int> rootInSet(int processSet, int root) {
  if (processSet == 0) return root;
  return processSets.rootIn(processSet, root);
}

using api::engineHandleOf;
using api::setOf;
using api::toHandle;

std::atomic<WaitInterrupt> waitInterrupt{nullptr};

// Ok once the request is done; with a WaitInterrupt set, waited for in 100 ms slices with
// the check between them (the first slice drives the cycle as the plain wait does).
Status awaitDone(engine::Engine& engine, engine::HandleId handle) {
  WaitInterrupt check = waitInterrupt.load(std::memory_order_acquire);
  if (check == nullptr) return Status::ok();
  for (;;) {
    auto done = engine.waitFor(handle, std::chrono::milliseconds(100));
    if (!done) return done.status();
    if (*done) return Status::ok();
    if (check()) return Status(Errc::kSystem, "interrupted while waiting; the request stays in flight");
  }
}

// The blocking calls: an unnamed request, waited for at once (the engine lets this thread
// drive the cycle, so no thread hand-off is paid).
Status runNow(engine::Spec spec, const void* in, void* out, int processSet = 0) {
  auto found = usable(processSet);
  if (!found) return found.status();
  const auto& rt = *found;
  auto handle = rt->engine().submit({.spec = spec, .in = in, .out = out, .waitedAtOnce = true});
  if (!handle) return inSet(handle.status(), processSet);
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return inSet(rt->engine().wait(*handle), processSet);
}

// A spec carrying the tensor's shape past its first dimension: an allgather's, alltoall's or
// reducescatter's rows, an allreduce's or broadcast's shape check (ranks whose tensors hold
// as many elements in other shapes disagree). `count` must be whole rows of it.
Result<engine::Spec> shapedSpec(engine::Spec spec, std::span<const std::int64_t> rowShape) {
  // Every collective call passes here: the kind's name is spelled out only for an error.
  auto refused = [&](const std::string& why) {
    return Status(Errc::kInvalidArgument, std::string(engine::opKindName(spec.kind)) + ": " + why);
  };
  for (std::int64_t extent : rowShape) {
    if (extent < 0) return refused("a row extent is negative");
  }
  spec.rows = engine::rowShapeOf(rowShape);
  const std::uint64_t perRow = spec.rows.elements;
  if (perRow == 0 ? spec.count != 0 : spec.count % perRow != 0) {
    return refused(std::to_string(spec.count) + " elements are not whole rows of shape " + engine::describe(spec.rows));
  }
  return spec;
}

// An allgather's spec; `count` must be whole rows of rowShape.
Result<engine::Spec> gatherSpec(size_t count, DataType type, Device device, std::span<const std::int64_t> rowShape) {
  return shapedSpec({engine::OpKind::kAllgather, type, ReduceOp::kSum, 0, count, device}, rowShape);
}

// A reducescatter's spec and this rank's output size in bytes; `count` must be whole rows.
Result<std::pair<engine::Spec, std::uint64_t>> scatterSpec(size_t count, DataType type, ReduceOp op, Device device,
                                                            std::span<const std::int64_t> rowShape,
                                                            const bootstrap::Identity& who) {
  auto spec = shapedSpec({engine::OpKind::kReducescatter, type, op, 0, count, device}, rowShape);
  if (!spec) return spec.status();
  const std::uint64_t perRow = spec->rows.elements;
  const std::uint64_t rows = perRow == 0 ? 0 : count / perRow;
  return std::pair{*spec, engine::reducescatterShare(rows, who.rank, who.size).rows * perRow * dataTypeSize(type)};
}

// counts in elements of `type` (the byte calls gather uint8).
Result<engine::Gathered> gatherNow(const void* mine, size_t count, DataType type = DataType::kUInt8,
                                   std::span<const std::int64_t> rowShape = {}, int processSet = 0) {
  auto found = usable(processSet);
  if (!found) return found.status();
  const auto& rt = *found;
  auto checked = gatherSpec(count, type, Device::kCpu, rowShape);
  if (!checked) return checked.status();
  engine::Spec spec = *checked;
  auto handle = rt->engine().submit({.spec = spec, .in = mine, .waitedAtOnce = true});
  if (!handle) return inSet(handle.status(), processSet);
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return inSet(rt->engine().waitGathered(*handle), processSet);
}

Result<Handle> submit(std::string_view name, engine::Spec spec, const void* in, void* out, int processSet) {
  auto rt = usable(processSet);
  if (!rt) return rt.status();
  auto id = (*rt)->engine().submit({std::string(name), spec, in, out});
  if (!id) return id.status();
  return toHandle(processSet, *id);
}

}  // namespace

Status init() {
  // A stopped runtime runs nothing: rejoining is the one useful meaning of init() there.
  if (stopped()) shutdown();
  std::lock_guard<std::mutex> lock(initMutex);
  if (current()) return Status::ok();
  // Its own runtime would join the job as its parent's rank a second time.
  if (forkedFrom.load() != 0) return forkedAfterInit();
  // Every variable is read here, once, and checked: a malformed HVD_RANK is an error, not 0.
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status().withContext("reading the job's environment");
  HVD_RETURN_IF_ERROR(detail::checkPreemptionSettings(*env));
  auto runtime = Runtime::fromEnvironment(*env);
  if (!runtime && runtime.status().code() == Errc::kTimeout && joinedBefore.load()) {
    // A rejoin meets only the ranks that rejoin too: the one it waited for never did.
    return runtime.status().withHint(
        "this init() rejoins the job after shutdown() (or after a peer stopped the runtime): every rank must call "
        "init() again, and the rank named has not");
  }
  if (!runtime) return runtime.status();
  joinedBefore.store(true);
  detail::installPreemptionHandler(*env);
  defaultRuntime.store(std::shared_ptr<Runtime>(std::move(*runtime)));
  runtimeLive.store(true);
  shutDown.store(false);
  static std::once_flag forkHandler;
  std::call_once(forkHandler, [] { ::pthread_atfork(nullptr, nullptr, markForkedChild); });
  // A program that never calls shutdown() still leaves its launcher properly (mpirun
  // reports a rank that exits without PMIx_Finalize as a failure).
  static bool atExitRegistered = false;
  if (!atExitRegistered) atExitRegistered = std::atexit([] { shutdown(); }) == 0;
  return Status::ok();
}

void shutdown() {
  std::lock_guard<std::mutex> lock(initMutex);
  auto rt = defaultRuntime.exchange(std::shared_ptr<Runtime>());
  if (!rt) return;
  if (forkedFrom.load() != 0) {
    // The parent's runtime: its threads are not here and its connections are the parent's.
    // Left alone (leaked), as the process ends without a word to the peers.
    new std::shared_ptr<Runtime>(std::move(rt));
    return;
  }
  runtimeLive.store(false);
  shutDown.store(true);
  // The sets first: each one's members shut it down together, as the job's ranks do theirs.
  for (auto& [id, entry] : processSets.takeAll()) {
    if (entry.runtime) entry.runtime->shutdown();
  }
  rt->shutdown();
}

namespace {

// What each rank brings to addProcessSet's one exchange over the whole job.
struct SetOffer {
  std::uint64_t hash = 0;   // of the ranks this rank was given (0: not a valid list)
  std::uint64_t token = 0;  // rank 0's random number: the set's keys at the rendezvous
  std::int32_t host = 0;    // this rank's host (its cross rank)
  std::int32_t valid = 0;
};

std::uint64_t hashOf(const std::vector<int>& ranks) {
  std::uint64_t h = 14695981039346656037ull;
  for (int r : ranks) h = (h ^ static_cast<std::uint64_t>(r)) * 1099511628211ull;
  return h | 1;  // never 0
}

// This rank's identity within `ranks` (sorted job ranks; it is one of them): local ranks
// among members on its host, cross ranks over the members' hosts in order of their lowest
// member, as hvdrun numbers a job's.
bootstrap::Identity identityIn(const std::vector<int>& ranks, const std::vector<int>& hostOf, int jobRank) {
  bootstrap::Identity id;
  id.size = static_cast<int>(ranks.size());
  std::vector<int> hosts;
  const int myHost = hostOf[static_cast<size_t>(jobRank)];
  id.localSize = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int host = hostOf[static_cast<size_t>(ranks[i])];
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    if (ranks[i] == jobRank) id.rank = static_cast<int>(i), id.localRank = id.localSize;
    if (host == myHost) ++id.localSize;
  }
  id.crossSize = static_cast<int>(hosts.size());
  id.crossRank = static_cast<int>(std::find(hosts.begin(), hosts.end(), myHost) - hosts.begin());
  return id;
}

}  // namespace

Result<int> addProcessSet(std::span<const int> given) {
  auto found = usable();
  if (!found) return found.status();
  const auto job = *found;
  std::lock_guard<std::mutex> adding(addMutex);
  const bootstrap::Identity& me = job->identity();
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status();
  // The same on every rank (a job hvdrun started, or not): refused by all before any exchange.
  if (me.size > 1 && !env->isSet("HVD_RENDEZVOUS_ADDR")) {
    return Status(Errc::kUnavailable,
                  "process sets connect their ranks through hvdrun's rendezvous, and hvdrun did not start this job")
        .withHint("start it with hvdrun (hvdrun --mpi for an MPI program)");
  }
  std::vector<int> ranks(given.begin(), given.end());
  std::sort(ranks.begin(), ranks.end());
  // What is wrong with the list, if anything; said only after the exchange, which every
  // rank reaches whatever its list, so that no rank waits in it alone.
  std::string wrong;
  if (ranks.empty()) wrong = "a process set needs at least one rank";
  for (int r : ranks) {
    if (wrong.empty() && (r < 0 || r >= me.size)) {
      wrong = "rank " + std::to_string(r) + " is not a rank of the job (0 to " + std::to_string(me.size - 1) + ")";
    }
  }
  if (wrong.empty() && std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    wrong = "rank " + std::to_string(*std::adjacent_find(ranks.begin(), ranks.end())) + " is given twice";
  }
  SetOffer mine{hashOf(ranks), 0, me.crossRank, wrong.empty() ? 1 : 0};
  if (me.rank == 0) {
    std::random_device random;
    mine.token = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  }
  std::vector<size_t> sizes;
  auto exchanged = allgatherv(&mine, sizeof mine, &sizes);
  if (!exchanged) return exchanged.status().withContext("adding a process set");
  std::vector<SetOffer> offers(static_cast<size_t>(me.size));
  std::memcpy(offers.data(), exchanged->data(), std::min(exchanged->size(), offers.size() * sizeof(SetOffer)));
  for (int r = 0; r < me.size; ++r) {
    if (offers[static_cast<size_t>(r)].hash != mine.hash) {
      return Status(Errc::kInvalidUsage, "add_process_set: rank " + std::to_string(r) +
                                             " asked for other ranks than this rank's (" + api::rankListText(ranks) +
                                             ")")
          .withHint("every rank, member or not, adds the same sets in the same order");
    }
  }
  if (!wrong.empty()) {
    return Status(Errc::kInvalidArgument, "add_process_set(" + api::rankListText(ranks) + "): " + wrong);
  }
  auto reserved = processSets.reserve(ranks, me.size);  // the same book, and answer, on every rank
  if (!reserved) return reserved.status();
  const int id = *reserved;
  std::vector<int> hostOf;
  for (const SetOffer& o : offers) hostOf.push_back(o.host);
  const bool member = std::binary_search(ranks.begin(), ranks.end(), me.rank);
  Result<std::unique_ptr<Runtime>> opened = std::unique_ptr<Runtime>();
  if (member) {
    char token[32];
    std::snprintf(token, sizeof token, "%016llx", static_cast<unsigned long long>(offers[0].token));
    opened = job->openProcessSet(identityIn(ranks, hostOf, me.rank), ranks, *env,
                                 "hvd.process_set/" + std::string(token) + "/" + std::to_string(id) + "/",
                                 api::setLabel(id, ranks), id);
  }
  // Every rank learns whether every member got its runtime, so the set exists everywhere
  // or nowhere.
  std::uint8_t ok = opened.isOk() ? 1 : 0;
  if (Status s = allreduce(&ok, &ok, 1, DataType::kUInt8, ReduceOp::kMin); !s.isOk()) {
    return s.withContext("adding a process set");
  }
  if (!opened) return opened.status().withContext("adding process set " + std::to_string(id));
  if (ok == 0) {
    if (*opened) (*opened)->shutdown();
    return Status(Errc::kRemote, "adding process set " + std::to_string(id) + " (" + api::rankListText(ranks) +
                                     "): a member could not connect (its own error says why)");
  }
  processSets.insert(id, {ranks, std::shared_ptr<Runtime>(std::move(*opened))});
  return id;
}

Status removeProcessSet(int processSet) {
  auto found = usable();
  if (!found) return found.status();
  std::lock_guard<std::mutex> adding(addMutex);
  if (processSet == 0) {
    return Status(Errc::kInvalidUsage, "process set 0 is the whole job and cannot be removed");
  }
  // Every rank removes the same set at the same point.
  std::int32_t mine = processSet;
  std::vector<size_t> sizes;
  auto all = allgatherv(&mine, sizeof mine, &sizes);
  if (!all) return all.status().withContext("removing process set " + std::to_string(processSet));
  for (size_t r = 0; r < all->size() / sizeof mine; ++r) {
    std::int32_t theirs = 0;
    std::memcpy(&theirs, all->data() + r * sizeof mine, sizeof mine);
    if (theirs != processSet) {
      return Status(Errc::kInvalidUsage, "remove_process_set(" + std::to_string(processSet) + "): rank " +
                                             std::to_string(r) + " removed process set " + std::to_string(theirs))
          .withHint("every rank, member or not, removes the same sets in the same order");
    }
  }
  auto entry = processSets.take(processSet);
  if (!entry) return entry.status();
  if (entry->runtime) entry->runtime->shutdown();
  return Status::ok();
}

Result<std::vector<int>> processSetRanks(int processSet) {
  if (processSet == 0) {
    std::vector<int> all(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }
  return processSets.ranksOf(processSet);
}

Result<int> processSetRank(int processSet) {
  if (processSet == 0) return rank();
  auto rt = usable(processSet);
  if (!rt) return rt.status();
  return (*rt)->identity().rank;
}

Result<int> processSetSize(int processSet) {
  auto ranks = processSetRanks(processSet);
  if (!ranks) return ranks.status();
  return static_cast<int>(ranks->size());
}

std::vector<int> processSetIds() { return processSets.ids(); }

bool initialized() { return current() != nullptr; }
bool stopped() {
  auto rt = current();
  return rt && forkedFrom.load() == 0 && rt->engine().stopped();
}
bool built(std::string_view backend) { return backends::compiledIn(backend); }
int ncclBuiltVersion() { return backends::ncclBuildVersion(); }
int rank() { auto rt = current(); return rt ? rt->identity().rank : 0; }
int size() { auto rt = current(); return rt ? rt->identity().size : 1; }
int localRank() { auto rt = current(); return rt ? rt->identity().localRank : 0; }
int localSize() { auto rt = current(); return rt ? rt->identity().localSize : 1; }
int crossRank() { auto rt = current(); return rt ? rt->identity().crossRank : 0; }
int crossSize() { auto rt = current(); return rt ? rt->identity().crossSize : 1; }
bool isHomogeneous() { auto rt = current(); return rt ? rt->homogeneous() : true; }
const char* operationsBackend() {
  auto rt = current();
  return rt ? rt->engine().cpuBackendName().data() : "";
}

Status allreduce(void* data, size_t count, DataType type, ReduceOp op, std::span<const std::int64_t> rowShape) {
  auto spec = shapedSpec({engine::OpKind::kAllreduce, type, op, 0, count, Device::kCpu}, rowShape);
  if (!spec) return spec.status();
  return runNow(*spec, data, data);
}

Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  return runNow({engine::OpKind::kAllreduce, type, op, 0, count, Device::kCpu}, in, out);
}

Status broadcast(void* data, size_t bytes, int root) {
  return runNow({engine::OpKind::kBroadcast, DataType::kUInt8, ReduceOp::kSum, root, bytes, Device::kCpu}, data, data);
}

Status allgather(const void* mine, size_t bytes, void* out) {
  auto gathered = gatherNow(mine, bytes);
  if (!gathered) return gathered.status();
  for (size_t r = 0; r < gathered->counts.size(); ++r) {
    if (gathered->counts[r] != bytes) {
      return invalidUsage("allgather of " + std::to_string(bytes) + " bytes here, but rank " + std::to_string(r) +
                          " gave " + std::to_string(gathered->counts[r]) + " (use allgatherv for shares of different sizes)");
    }
  }
  if (!gathered->bytes.empty()) std::memcpy(out, gathered->bytes.data(), gathered->bytes.size());
  return Status::ok();
}

Status allgatherv(const void* mine, const size_t* bytesPerRank, void* out) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto gathered = gatherNow(mine, bytesPerRank[rt->identity().rank]);
  if (!gathered) return gathered.status();
  for (size_t r = 0; r < gathered->counts.size(); ++r) {
    if (gathered->counts[r] != bytesPerRank[r]) {
      return invalidUsage("allgatherv: rank " + std::to_string(r) + " gave " + std::to_string(gathered->counts[r]) +
                          " bytes, but this rank was told " + std::to_string(bytesPerRank[r]));
    }
  }
  if (!gathered->bytes.empty()) std::memcpy(out, gathered->bytes.data(), gathered->bytes.size());
  return Status::ok();
}

Result<std::vector<std::byte>> allgatherv(const void* mine, size_t bytes, std::vector<size_t>* bytesPerRank) {
  auto gathered = gatherNow(mine, bytes);
  if (!gathered) return gathered.status();
  if (bytesPerRank != nullptr) bytesPerRank->assign(gathered->counts.begin(), gathered->counts.end());
  return std::move(gathered->bytes);
}

Result<std::vector<std::byte>> allgatherv(const void* mine, size_t count, DataType type,
                                          std::vector<size_t>* countsPerRank, std::span<const std::int64_t> rowShape,
                                          int processSet) {
  auto gathered = gatherNow(mine, count, type, rowShape, processSet);
  if (!gathered) return gathered.status();
  if (countsPerRank != nullptr) countsPerRank->assign(gathered->counts.begin(), gathered->counts.end());
  return std::move(gathered->bytes);
}

Status barrier(int processSet) {
  return runNow({engine::OpKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, Device::kCpu}, nullptr, nullptr,
                processSet);
}

Status startTimeline(std::string_view path, bool markCycles) {
  auto found = usable();
  if (!found) return found.status();
  if (path.empty()) return invalidArgument("start_timeline: the file path is empty");
  // Checked on every rank: rank r writes the name with ".rank<r>" added, which beside a
  // directory would be a new file while rank 0 failed.
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::path(path), ec)) {
    return invalidArgument("start_timeline: '" + std::string(path) + "' is a directory, not a file to write the trace to");
  }
  return (*found)->engine().startTimeline(timeline::rankTracePath(std::string(path), (*found)->identity().rank),
                                          markCycles);
}

Status stopTimeline() {
  auto found = usable();
  if (!found) return found.status();
  (*found)->engine().stopTimeline();
  return Status::ok();
}

Result<int> join() {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto handle = rt->engine().submitJoin();
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return rt->engine().waitJoin(*handle);
}

Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op, Device device, int processSet,
                 std::span<const std::int64_t> rowShape) {
  auto spec = shapedSpec({engine::OpKind::kAllreduce, type, op, 0, count, device}, rowShape);
  if (!spec) return spec.status();
  return runNow(*spec, in, out, processSet);
}

Status broadcast(void* data, size_t count, DataType type, int root, Device device, int processSet,
                 std::span<const std::int64_t> rowShape) {
  auto inSet = rootInSet(processSet, root);
  if (!inSet) return inSet.status();
  auto spec = shapedSpec({engine::OpKind::kBroadcast, type, ReduceOp::kSum, *inSet, count, device}, rowShape);
  if (!spec) return spec.status();
  return runNow(*spec, data, data, processSet);
}

Status allgatherv(const void* mine, const size_t* countsPerRank, void* out, DataType type, Device device) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  int size = rt->identity().size;
  std::uint64_t total = 0;
  for (int r = 0; r < size; ++r) total += countsPerRank[r];
  size_t own = countsPerRank[rt->identity().rank];
  engine::Spec spec{engine::OpKind::kAllgather, type, ReduceOp::kSum, 0, own, device};
  auto handle = rt->engine().submit({"", spec, mine, out, total * dataTypeSize(type)});
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  auto gathered = rt->engine().waitGathered(*handle);
  if (!gathered) return gathered.status();
  for (size_t r = 0; r < gathered->counts.size(); ++r) {
    if (gathered->counts[r] != countsPerRank[r]) {
      return invalidUsage("allgatherv: rank " + std::to_string(r) + " gave " + std::to_string(gathered->counts[r]) +
                          " elements, but this rank was told " + std::to_string(countsPerRank[r]));
    }
  }
  return Status::ok();
}

Result<bool> waitForGpuStream(void* stream, int processSet) {
  auto found = usable(processSet);
  if (!found) return false;  // no runtime, or not in the set: the collective itself says why
  auto waits = (*found)->engine().waitForGpuStream(stream);
  if (!waits) return inSet(waits.status(), processSet);
  return *waits;
}

Status setGpuStream(void* stream) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  return rt->engine().setGpuStream(stream);
}

const char* gpuOperationsBackend() {
  auto rt = current();
  return rt ? rt->engine().backendName(Device::kCuda).data() : "";
}

Result<Handle> allreduceAsync(std::string_view name, const void* in, void* out, size_t count, DataType type,
                              ReduceOp op, Device device, int processSet, std::span<const std::int64_t> rowShape) {
  auto spec = shapedSpec({engine::OpKind::kAllreduce, type, op, 0, count, device}, rowShape);
  if (!spec) return spec.status();
  return submit(name, *spec, in, out, processSet);
}

Result<Handle> broadcastAsync(std::string_view name, void* data, size_t count, DataType type, int root, Device device,
                              int processSet, std::span<const std::int64_t> rowShape) {
  auto inSet = rootInSet(processSet, root);
  if (!inSet) return inSet.status();
  auto spec = shapedSpec({engine::OpKind::kBroadcast, type, ReduceOp::kSum, *inSet, count, device}, rowShape);
  if (!spec) return spec.status();
  return submit(name, *spec, data, data, processSet);
}

Result<Handle> allgatherAsync(std::string_view name, const void* in, size_t count, DataType type, Device device,
                              std::span<const std::int64_t> rowShape, int processSet) {
  auto spec = gatherSpec(count, type, device, rowShape);
  if (!spec) return spec.status();
  return submit(name, *spec, in, nullptr, processSet);
}

Result<Handle> reducescatterAsync(std::string_view name, const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op, std::span<const std::int64_t> rowShape, Device device, int processSet) {
  auto rt = usable(processSet);
  if (!rt) return rt.status();
  auto checked = scatterSpec(count, type, op, device, rowShape, (*rt)->identity());
  if (!checked) return checked.status();
  auto id = (*rt)->engine().submit({std::string(name), checked->first, in, out, checked->second});
  if (!id) return id.status();
  return toHandle(processSet, *id);
}

Status reducescatter(const void* in, void* out, size_t count, DataType type, ReduceOp op,
                     std::span<const std::int64_t> rowShape, int processSet) {
  auto found = usable(processSet);
  if (!found) return found.status();
  const auto& rt = *found;
  auto checked = scatterSpec(count, type, op, Device::kCpu, rowShape, rt->identity());
  if (!checked) return checked.status();
  auto handle = rt->engine().submit(
      {.spec = checked->first, .in = in, .out = out, .outBytes = checked->second, .waitedAtOnce = true});
  if (!handle) return inSet(handle.status(), processSet);
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return inSet(rt->engine().wait(*handle), processSet);
}

namespace {

// The engine's result as the API hands it over (a GPU tensor's stays on its device).
Gathered handedOver(engine::Gathered&& g) {
  Gathered out;
  out.data = std::move(g.bytes);
  out.counts.assign(g.counts.begin(), g.counts.end());
  out.device = g.device;
  out.onDevice = std::move(g.onDevice.memory);
  out.onDeviceBytes = g.onDevice.bytes;
  out.deviceOrdinal = g.onDevice.ordinal;
  return out;
}

Result<engine::Engine::Submission> alltoallSubmission(std::string_view name, const void* in, size_t count,
                                                      DataType type, std::span<const std::uint64_t> splits,
                                                      std::span<const std::int64_t> rowShape, Device device) {
  engine::Spec spec{engine::OpKind::kAlltoall, type, ReduceOp::kSum, 0, count, device};
  for (std::int64_t extent : rowShape) {
    if (extent < 0) return Status(Errc::kInvalidArgument, "alltoall: a row extent is negative");
  }
  spec.rows = engine::rowShapeOf(rowShape);
  engine::Engine::Submission s{std::string(name), spec, in};
  s.splits.assign(splits.begin(), splits.end());
  return s;
}

}  // namespace

Result<Handle> alltoallAsync(std::string_view name, const void* in, size_t count, DataType type,
                             std::span<const std::uint64_t> splits, std::span<const std::int64_t> rowShape,
                             Device device, int processSet) {
  auto rt = usable(processSet);
  if (!rt) return rt.status();
  auto s = alltoallSubmission(name, in, count, type, splits, rowShape, device);
  if (!s) return s.status();
  auto id = (*rt)->engine().submit(std::move(*s));
  if (!id) return id.status();
  return toHandle(processSet, *id);
}

Result<Gathered> alltoall(const void* in, size_t count, DataType type, std::span<const std::uint64_t> splits,
                          std::span<const std::int64_t> rowShape, int processSet) {
  auto found = usable(processSet);
  if (!found) return found.status();
  const auto& rt = *found;
  auto s = alltoallSubmission("", in, count, type, splits, rowShape, Device::kCpu);
  if (!s) return s.status();
  s->waitedAtOnce = true;  // this thread drives the cycle, as the other blocking calls do
  auto handle = rt->engine().submit(std::move(*s));
  if (!handle) return inSet(handle.status(), processSet);
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  auto gathered = rt->engine().waitGathered(*handle);
  if (!gathered) return inSet(gathered.status(), processSet);
  return handedOver(std::move(*gathered));
}

namespace {

// This rank's rank and the size of the set (0 of 1 outside it: no rows).
engine::Share shareIn(size_t rows, int processSet) {
  if (processSet == 0) return engine::reducescatterShare(rows, rank(), size());
  auto rt = usable(processSet);
  if (!rt) return {};
  return engine::reducescatterShare(rows, (*rt)->identity().rank, (*rt)->identity().size);
}

// A handle's runtime (its set's), when the set is still there.
Result<std::shared_ptr<Runtime>> usableFor(Handle handle) { return usable(setOf(handle)); }

}  // namespace

size_t reducescatterRows(size_t rows, int processSet) { return shareIn(rows, processSet).rows; }
size_t reducescatterFirstRow(size_t rows, int processSet) { return shareIn(rows, processSet).firstRow; }

Result<bool> poll(Handle handle) {
  auto found = usableFor(handle);
  if (!found) return found.status();
  const auto& rt = *found;
  return rt->engine().poll(engineHandleOf(handle));
}

Result<bool> waitFor(Handle handle, std::chrono::milliseconds timeout) {
  auto found = usableFor(handle);
  if (!found) return found.status();
  const auto& rt = *found;
  return rt->engine().waitFor(engineHandleOf(handle), timeout);
}

Status synchronize(Handle handle) {
  auto found = usableFor(handle);
  if (!found) return found.status();
  const auto& rt = *found;
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), engineHandleOf(handle)));
  return inSet(rt->engine().wait(engineHandleOf(handle)), setOf(handle));
}

void setWaitInterrupt(WaitInterrupt check) { waitInterrupt.store(check, std::memory_order_release); }

Result<Gathered> synchronizeAllgather(Handle handle) {
  auto found = usableFor(handle);
  if (!found) return found.status();
  const auto& rt = *found;
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), engineHandleOf(handle)));
  auto gathered = rt->engine().waitGathered(engineHandleOf(handle));
  if (!gathered) return inSet(gathered.status(), setOf(handle));
  return handedOver(std::move(*gathered));
}

}  // namespace hvd
