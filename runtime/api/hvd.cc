// runtime/api/hvd.cc: the public C++ API as a facade over one default Runtime. The
// pointer is swapped atomically, so calls from any thread see a whole Runtime or none,
// and shutdown() cannot pull it from under a call in progress.
#include "hvd/hvd.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/api/preemption.h"
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

Status notInitialized() { return Status(Errc::kInvalidUsage, "hvd::init() has not been called (or failed)"); }

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
Status runNow(engine::Spec spec, const void* in, void* out) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto handle = rt->engine().submit({.spec = spec, .in = in, .out = out, .waitedAtOnce = true});
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return rt->engine().wait(*handle);
}

// An allgather's spec; `count` must be whole rows of rowShape.
Result<engine::Spec> gatherSpec(size_t count, DataType type, Device device, std::span<const std::int64_t> rowShape) {
  engine::Spec spec{engine::OpKind::kAllgather, type, ReduceOp::kSum, 0, count, device};
  for (std::int64_t extent : rowShape) {
    if (extent < 0) return Status(Errc::kInvalidArgument, "allgather: a row extent is negative");
  }
  spec.rows = engine::rowShapeOf(rowShape);
  std::uint64_t perRow = spec.rows.elements;
  if (perRow == 0 ? count != 0 : count % perRow != 0) {
    return Status(Errc::kInvalidArgument, "allgather: " + std::to_string(count) + " elements are not whole rows of shape " +
                                              engine::describe(spec.rows));
  }
  return spec;
}

// A reducescatter's spec and this rank's output size in bytes; `count` must be whole rows.
Result<std::pair<engine::Spec, std::uint64_t>> scatterSpec(size_t count, DataType type, ReduceOp op, Device device,
                                                            std::span<const std::int64_t> rowShape) {
  engine::Spec spec{engine::OpKind::kReducescatter, type, op, 0, count, device};
  for (std::int64_t extent : rowShape) {
    if (extent < 0) return Status(Errc::kInvalidArgument, "reducescatter: a row extent is negative");
  }
  spec.rows = engine::rowShapeOf(rowShape);
  const std::uint64_t perRow = spec.rows.elements;
  if (perRow == 0 ? count != 0 : count % perRow != 0) {
    return Status(Errc::kInvalidArgument, "reducescatter: " + std::to_string(count) +
                                              " elements are not whole rows of shape " + engine::describe(spec.rows));
  }
  const std::uint64_t rows = perRow == 0 ? 0 : count / perRow;
  return std::pair{spec, engine::reducescatterShare(rows, rank(), size()).rows * perRow * dataTypeSize(type)};
}

// counts in elements of `type` (the byte calls gather uint8).
Result<engine::Gathered> gatherNow(const void* mine, size_t count, DataType type = DataType::kUInt8,
                                   std::span<const std::int64_t> rowShape = {}) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto checked = gatherSpec(count, type, Device::kCpu, rowShape);
  if (!checked) return checked.status();
  engine::Spec spec = *checked;
  auto handle = rt->engine().submit({.spec = spec, .in = mine, .waitedAtOnce = true});
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return rt->engine().waitGathered(*handle);
}

Result<Handle> submit(std::string_view name, engine::Spec spec, const void* in, void* out) {
  auto rt = usable();
  if (!rt) return rt.status();
  return (*rt)->engine().submit({std::string(name), spec, in, out});
}

}  // namespace

Status init() {
  std::lock_guard<std::mutex> lock(initMutex);
  if (current()) return Status::ok();
  // Its own runtime would join the job as its parent's rank a second time.
  if (forkedFrom.load() != 0) return forkedAfterInit();
  // Every variable is read here, once, and checked: a malformed HVD_RANK is an error, not 0.
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status().withContext("reading the job's environment");
  HVD_RETURN_IF_ERROR(detail::checkPreemptionSettings(*env));
  auto runtime = Runtime::fromEnvironment(*env);
  if (!runtime) return runtime.status();
  detail::installPreemptionHandler(*env);
  defaultRuntime.store(std::shared_ptr<Runtime>(std::move(*runtime)));
  runtimeLive.store(true);
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
  rt->shutdown();
}

bool initialized() { return current() != nullptr; }
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

Status allreduce(void* data, size_t count, DataType type, ReduceOp op) { return allreduce(data, data, count, type, op); }

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
                                          std::vector<size_t>* countsPerRank, std::span<const std::int64_t> rowShape) {
  auto gathered = gatherNow(mine, count, type, rowShape);
  if (!gathered) return gathered.status();
  if (countsPerRank != nullptr) countsPerRank->assign(gathered->counts.begin(), gathered->counts.end());
  return std::move(gathered->bytes);
}

Status barrier() {
  return runNow({engine::OpKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, Device::kCpu}, nullptr, nullptr);
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

Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op, Device device) {
  return runNow({engine::OpKind::kAllreduce, type, op, 0, count, device}, in, out);
}

Status broadcast(void* data, size_t count, DataType type, int root, Device device) {
  return runNow({engine::OpKind::kBroadcast, type, ReduceOp::kSum, root, count, device}, data, data);
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
                              ReduceOp op, Device device) {
  return submit(name, {engine::OpKind::kAllreduce, type, op, 0, count, device}, in, out);
}

Result<Handle> broadcastAsync(std::string_view name, void* data, size_t count, DataType type, int root, Device device) {
  return submit(name, {engine::OpKind::kBroadcast, type, ReduceOp::kSum, root, count, device}, data, data);
}

Result<Handle> allgatherAsync(std::string_view name, const void* in, size_t count, DataType type, Device device,
                              std::span<const std::int64_t> rowShape) {
  auto spec = gatherSpec(count, type, device, rowShape);
  if (!spec) return spec.status();
  return submit(name, *spec, in, nullptr);
}

Result<Handle> reducescatterAsync(std::string_view name, const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op, std::span<const std::int64_t> rowShape, Device device) {
  auto rt = usable();
  if (!rt) return rt.status();
  auto checked = scatterSpec(count, type, op, device, rowShape);
  if (!checked) return checked.status();
  return (*rt)->engine().submit({std::string(name), checked->first, in, out, checked->second});
}

Status reducescatter(const void* in, void* out, size_t count, DataType type, ReduceOp op,
                     std::span<const std::int64_t> rowShape) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto checked = scatterSpec(count, type, op, Device::kCpu, rowShape);
  if (!checked) return checked.status();
  auto handle = rt->engine().submit(
      {.spec = checked->first, .in = in, .out = out, .outBytes = checked->second, .waitedAtOnce = true});
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  return rt->engine().wait(*handle);
}

namespace {

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
                             std::span<const std::uint64_t> splits, std::span<const std::int64_t> rowShape, Device device) {
  auto rt = usable();
  if (!rt) return rt.status();
  auto s = alltoallSubmission(name, in, count, type, splits, rowShape, device);
  if (!s) return s.status();
  return (*rt)->engine().submit(std::move(*s));
}

Result<Gathered> alltoall(const void* in, size_t count, DataType type, std::span<const std::uint64_t> splits,
                          std::span<const std::int64_t> rowShape) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  auto s = alltoallSubmission("", in, count, type, splits, rowShape, Device::kCpu);
  if (!s) return s.status();
  s->waitedAtOnce = true;  // this thread drives the cycle, as the other blocking calls do
  auto handle = rt->engine().submit(std::move(*s));
  if (!handle) return handle.status();
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), *handle));
  auto gathered = rt->engine().waitGathered(*handle);
  if (!gathered) return gathered.status();
  return Gathered{std::move(gathered->bytes), std::vector<size_t>(gathered->counts.begin(), gathered->counts.end())};
}

size_t reducescatterRows(size_t rows) { return engine::reducescatterShare(rows, rank(), size()).rows; }
size_t reducescatterFirstRow(size_t rows) { return engine::reducescatterShare(rows, rank(), size()).firstRow; }

Result<bool> poll(Handle handle) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  return rt->engine().poll(handle);
}

Result<bool> waitFor(Handle handle, std::chrono::milliseconds timeout) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  return rt->engine().waitFor(handle, timeout);
}

Status synchronize(Handle handle) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), handle));
  return rt->engine().wait(handle);
}

void setWaitInterrupt(WaitInterrupt check) { waitInterrupt.store(check, std::memory_order_release); }

Result<Gathered> synchronizeAllgather(Handle handle) {
  auto found = usable();
  if (!found) return found.status();
  const auto& rt = *found;
  HVD_RETURN_IF_ERROR(awaitDone(rt->engine(), handle));
  auto gathered = rt->engine().waitGathered(handle);
  if (!gathered) return gathered.status();
  return Gathered{std::move(gathered->bytes), std::vector<size_t>(gathered->counts.begin(), gathered->counts.end())};
}

}  // namespace hvd
