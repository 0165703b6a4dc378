// runtime/api/hvd.cc: the public C++ API's collectives and queries, a facade over the
// process's default Runtime (default_runtime.h): blocking and async calls, their spec
// checks, and waiting that a caller may interrupt.
#include "hvd/hvd.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "runtime/api/default_runtime.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/core/runtime.h"
#include "runtime/timeline/trace_files.h"

namespace hvd {
namespace {

using api::current;
using api::inSet;
using api::rootInSet;
using api::usable;

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
