// runtime/engine/engine_execution.cc: running what negotiation decided, in its order on
// every rank: the ready list fused into groups (fusion_plan.h), each group on the backend
// for its device, with the collectives a backend lacks built from the ones it has.
#include <algorithm>
#include <cstring>

#include "runtime/engine/engine_parts.h"
#include "runtime/engine/fusion_plan.h"

namespace hvd::engine {

using backends::TensorRef;

backends::CollectiveBackend* Engine::backendFor(Device device) {
  for (auto& b : backends_) {
    if (b->supports(device)) return b.get();
  }
  return nullptr;
}

Status Engine::setGpuStream(void* stream) {
  std::lock_guard<std::mutex> cycle(cycleMutex_);
  backends::CollectiveBackend* gpu = backendFor(Device::kCuda);
  if (gpu == nullptr) return unavailable("no backend moves GPU tensors here");
  return gpu->useStream(stream);
}

Result<bool> Engine::waitForGpuStream(void* stream) {
  backends::CollectiveBackend* gpu = backendFor(Device::kCuda);
  return gpu == nullptr ? Result<bool>(false) : gpu->waitForStream(stream);
}

std::string_view Engine::backendName(Device device) const {
  for (const auto& b : backends_) {
    if (b->supports(device)) return b->name();
  }
  return "none";
}

Status Engine::execute(ReadyList& ready) {
  std::vector<Spec> specs;
  specs.reserve(ready.size());
  for (const auto& r : ready) specs.push_back(r.first.spec);
  std::vector<FusionGroup> groups = planFusion(specs, options_.fusionThresholdBytes);
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& members = groups[g].members;
    Status s;
    if (members.size() > 1) {
      s = ready[members[0]].first.spec.kind == OpKind::kReducescatter ? runReducescatterGroup(ready, members)
                                                                        : runAllreduceGroup(ready, members);
    } else {
      Operation& op = *ready[members[0]].second;
      double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
      s = runAlone(ready[members[0]].first, op);
      if (timeline_) {
        double t1 = timeline::TimelineWriter::nowUs();
        backends::CollectiveBackend* backend = backendFor(op.spec.device);
        if (t0 - op.readyUs > 1.0) span(op, "QUEUE", op.readyUs, t0);  // only when it waited
        span(op, opName(op.spec.kind), t0, t1, true);
        span(op, activityName(backend, op.spec), t0, t1);
      }
      complete(ready[members[0]].second, s);
    }
    if (!s.isOk()) {
      // The backend is poisoned now: what had not run fails with the same cause.
      for (size_t later = g + 1; later < groups.size(); ++later) {
        for (size_t m : groups[later].members) complete(ready[m].second, s);
      }
      return s;
    }
  }
  return Status::ok();
}

Status Engine::runAllreduceGroup(const ReadyList& ready,
                                 const std::vector<size_t>& members) {
  const Spec& first = ready[members[0]].first.spec;
  std::uint64_t total = 0;
  for (size_t m : members) total += ready[m].first.spec.bytes();
  backends::CollectiveBackend* backend = backendFor(first.device);
  if (backend == nullptr) {
    Status none = unavailable("no backend moves " + describe(first));
    for (size_t m : members) complete(ready[m].second, none);
    return none;
  }
  // Host tensors are packed here with memcpy; device tensors into the backend's own
  // device buffer with copies queued on its stream (ordered before its collective).
  bool onHost = first.device == Device::kCpu;
  std::byte* fused = nullptr;
  Status s;
  if (onHost) {
    if (fusionBuffer_.size() < total) fusionBuffer_.resize(total);
    fused = fusionBuffer_.data();
  } else if (auto scratch = backend->scratch(total, ready[members[0]].second->in); scratch) {
    fused = *scratch;
  } else {
    s = scratch.status();
  }
  // Every member's bytes into the fusion buffer (packing) or back out: memcpy on the host;
  // device tensors to the backend in one call (one kernel launch on a GPU).
  auto moveMembers = [&](bool packing) -> Status {
    std::vector<backends::DeviceCopy> copies;
    std::uint64_t at = 0;
    for (size_t m : members) {
      Operation& op = *ready[m].second;
      void* dst = packing ? static_cast<void*>(fused + at) : op.out;
      const void* src = packing ? op.in : fused + at;
      if (onHost) {
        std::memcpy(dst, src, op.spec.bytes());
      } else {
        copies.push_back({dst, src, op.spec.bytes()});
      }
      at += op.spec.bytes();
    }
    return onHost ? Status::ok() : backend->copyMany(copies);
  };
  double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) s = moveMembers(true);
  double t1 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) {
    const TensorRef whole{fused, total / dataTypeSize(first.type), first.type, first.device};
    if (first.op == ReduceOp::kAdasum) {
      // Each member keeps its own coefficients: the backend is told where each one ends.
      std::vector<size_t> counts;
      for (size_t m : members) counts.push_back(static_cast<size_t>(ready[m].first.spec.count));
      s = backend->adasum(whole, counts);
    } else {
      s = backend->allreduce(whole, first.op);
    }
  }
  double t2 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) s = moveMembers(false);
  if (s.isOk() && !onHost) s = backend->finishCopies();
  if (timeline_) {
    Spec whole = first;
    whole.count = total / dataTypeSize(first.type);
    spanFusedGroup(ready, members, whole, backend, t0, t1, t2);
  }
  for (size_t m : members) complete(ready[m].second, s);
  return s;
}

// Host reducescatters of one type and op (one, or a fused group): every member's part for
// rank 0, then every member's part for rank 1, ..., packed into the fusion buffer, so that
// one reduce-scatter (or, on a backend without one, one allreduce) gives each rank its parts
// of all of them. `total`: the elements packed; t1 and t2 (with a timeline): when the
// collective began and ended.
Status Engine::hostReducescatter(backends::CollectiveBackend& backend, const std::vector<Operation*>& ops,
                                 size_t& total, double& t1, double& t2) {
  const DataType type = ops[0]->spec.type;
  const ReduceOp op = ops[0]->spec.op;
  const size_t n = static_cast<size_t>(size_), me = static_cast<size_t>(rank_), width = dataTypeSize(type);
  // parts[i * n + r]: the elements of member i that rank r keeps; perRank[r]: all of rank r's.
  std::vector<size_t> parts(ops.size() * n), perRank(n, 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const Spec& spec = ops[i]->spec;
    const std::uint64_t rows = spec.rows.elements == 0 ? 0 : spec.count / spec.rows.elements;
    for (size_t r = 0; r < n; ++r) {
      parts[i * n + r] = reducescatterShare(rows, static_cast<int>(r), size_).rows * spec.rows.elements;
      perRank[r] += parts[i * n + r];
    }
  }
  size_t mineAt = 0;
  total = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == me) mineAt = total;
    total += perRank[r];
  }
  // The packed buffer, then room for this rank's result.
  if (fusionBuffer_.size() < (total + perRank[me]) * width) fusionBuffer_.resize((total + perRank[me]) * width);
  std::byte* fused = fusionBuffer_.data();
  std::vector<size_t> taken(ops.size(), 0);  // elements of each member packed so far
  size_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t count = parts[i * n + r];
      if (count > 0) std::memcpy(fused + at * width, static_cast<const std::byte*>(ops[i]->in) +
                                                         taken[i] * width, count * width);
      taken[i] += count, at += count;
    }
  }
  if (timeline_) t1 = timeline::TimelineWriter::nowUs();
  TensorRef all{fused, total, type, Device::kCpu};
  std::byte* mine = fused + total * width;
  Status s;
  if (total > 0 && backend.hasReducescatter()) {
    s = backend.reducescatter(all, perRank, op, mine);
  } else if (total > 0) {
    s = backend.allreduce(all, op);
    mine = fused + mineAt * width;
  }
  if (timeline_) t2 = timeline::TimelineWriter::nowUs();
  at = 0;
  for (size_t i = 0; i < ops.size() && s.isOk(); ++i) {
    const size_t count = parts[i * n + me];
    if (count > 0) std::memcpy(ops[i]->out, mine + at * width, count * width);
    at += count;
  }
  return s;
}

// A fused group of host reducescatters (hostReducescatter), with its timeline spans.
Status Engine::runReducescatterGroup(const ReadyList& ready, const std::vector<size_t>& members) {
  const Spec& first = ready[members[0]].first.spec;
  backends::CollectiveBackend* backend = backendFor(first.device);
  if (backend == nullptr) {
    Status none = unavailable("no backend moves " + describe(first));
    for (size_t m : members) complete(ready[m].second, none);
    return none;
  }
  double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0, t1 = 0, t2 = 0;
  std::vector<Operation*> ops;
  for (size_t m : members) ops.push_back(ready[m].second.get());
  size_t total = 0;
  Status s = hostReducescatter(*backend, ops, total, t1, t2);
  if (timeline_) {
    Spec whole = first;
    whole.count = total;
    spanFusedGroup(ready, members, whole, backend, t0, t1, t2);
  }
  for (size_t m : members) complete(ready[m].second, s);
  return s;
}

Status Engine::runAlone(const Response& response, Operation& op) {
  const Spec& spec = op.spec;
  backends::CollectiveBackend* backend = backendFor(spec.device);
  if (backend == nullptr) return unavailable("no backend moves " + describe(spec));
  switch (spec.kind) {
    case OpKind::kAllreduce:
      if (op.in != op.out && spec.count > 0) {
        if (spec.device == Device::kCpu) {
          std::memmove(op.out, op.in, spec.bytes());
        } else {
          HVD_RETURN_IF_ERROR(backend->copy(op.out, op.in, spec.bytes()));
        }
      }
      if (spec.op == ReduceOp::kAdasum) {
        const size_t counts[] = {static_cast<size_t>(spec.count)};
        return backend->adasum(TensorRef{op.out, spec.count, spec.type, spec.device}, counts);
      }
      return backend->allreduce(TensorRef{op.out, spec.count, spec.type, spec.device}, spec.op);
    case OpKind::kBroadcast:
      return backend->broadcast(TensorRef{op.out, spec.count, spec.type, spec.device}, spec.root);
    case OpKind::kBarrier:
      return backend->barrier();
    case OpKind::kReducescatter:
      return runReducescatter(*backend, op);
    case OpKind::kAlltoall:
      return runAlltoall(*backend, op);
    case OpKind::kAllgather: {
      std::vector<std::uint64_t> counts = response.counts;
      if (counts.empty()) {  // unnamed: the shares are learnt now
        counts.resize(static_cast<size_t>(size_));
        std::uint64_t own = spec.count;
        std::vector<size_t> eight(static_cast<size_t>(size_), sizeof own);
        HVD_RETURN_IF_ERROR(backends_.front()->allgatherv(TensorRef{&own, sizeof own, DataType::kUInt8, Device::kCpu},
                                                          eight, counts.data()));
      }
      std::vector<size_t> bytesPerRank;
      size_t total = 0;
      for (auto c : counts) {
        bytesPerRank.push_back(static_cast<size_t>(c * dataTypeSize(spec.type)));
        total += bytesPerRank.back();
      }
      op.gathered.counts = counts;
      TensorRef mine{const_cast<void*>(op.in), spec.count, spec.type, spec.device};
      if (op.out != nullptr) {  // the caller's buffer, on the tensor's device
        if (total != op.outBytes) {
          return invalidUsage("allgather gathers " + std::to_string(total) + " bytes, but the output buffer holds " +
                              std::to_string(op.outBytes));
        }
        return backend->allgatherv(mine, bytesPerRank, op.out);
      }
      if (spec.device == Device::kCpu) {
        op.gathered.bytes.resize(total);
        return backend->allgatherv(mine, bytesPerRank, op.gathered.bytes.data());
      }
      // A GPU allgather without an output buffer gathers into device memory the backend
      // allocates now that the size is known, and hands it over: through host memory it
      // cost a pageable copy each way (64 MiB on an H200: 60 ms against 23 us on device).
      auto result = backend->allocate(total, spec.count > 0 ? op.in : nullptr);
      if (!result) return result.status();
      HVD_RETURN_IF_ERROR(backend->allgatherv(mine, bytesPerRank, result->memory.get()));
      HVD_RETURN_IF_ERROR(backend->finishCopies());
      op.gathered.device = spec.device;
      op.gathered.onDevice = std::move(*result);
      return Status::ok();
    }
  }
  return internalError("unknown request kind");
}

// The backend's own reduce-scatter where it has one (half an allreduce's traffic);
// otherwise an allreduce of the whole tensor of which this rank keeps its rows, at twice
// the traffic (docs/runtime.md says so).
Status Engine::runReducescatter(backends::CollectiveBackend& backend, Operation& op) {
  const Spec& spec = op.spec;
  if (spec.count == 0) return Status::ok();  // the same on every rank: the count was agreed
  if (spec.device == Device::kCpu) {
    size_t total = 0;
    double t1 = 0, t2 = 0;  // this op's spans come from runAlone's caller
    return hostReducescatter(backend, {&op}, total, t1, t2);
  }
  const std::uint64_t rows = spec.rows.elements == 0 ? 0 : spec.count / spec.rows.elements;
  if (backend.hasReducescatter()) {
    // A GPU tensor's rows are already in rank order: no packing, and the backend only reads it.
    std::vector<size_t> perRank;
    for (int r = 0; r < size_; ++r) perRank.push_back(reducescatterShare(rows, r, size_).rows * spec.rows.elements);
    return backend.reducescatter(TensorRef{const_cast<void*>(op.in), spec.count, spec.type, spec.device}, perRank,
                                 spec.op, op.out);
  }
  const Share share = reducescatterShare(rows, rank_, size_);
  const size_t width = spec.rows.elements * dataTypeSize(spec.type);
  const size_t shareBytes = share.rows * width;  // the output's size, checked at submission
  auto scratch = backend.scratch(spec.bytes(), op.in);
  if (!scratch) return scratch.status();
  HVD_RETURN_IF_ERROR(backend.copy(*scratch, op.in, spec.bytes()));
  HVD_RETURN_IF_ERROR(backend.allreduce(TensorRef{*scratch, spec.count, spec.type, spec.device}, spec.op));
  if (shareBytes > 0) HVD_RETURN_IF_ERROR(backend.copy(op.out, *scratch + share.firstRow * width, shareBytes));
  return backend.finishCopies();
}

// Every rank's send counts gathered first; then the backend's own alltoall where it has
// one, else (host tensors) every rank's whole buffer gathered, of which this rank keeps the
// rows each rank sent it, at size() times a pairwise exchange's traffic (docs/runtime.md
// says so). A GPU alltoall receives into device memory the backend allocates and hands it
// over, as a GPU allgather without an output buffer does.
Status Engine::runAlltoall(backends::CollectiveBackend& backend, Operation& op) {
  const Spec& spec = op.spec;
  if (spec.device != Device::kCpu && !backend.hasAlltoall()) {
    // Alike on every rank: the GPU backend is the job's choice, made at init.
    return unavailable(describe(spec) + ": the " + std::string(backend.name()) +
                       " backend has no alltoall for GPU tensors; copy the tensor to the CPU");
  }
  const size_t n = static_cast<size_t>(size_), width = dataTypeSize(spec.type);
  std::vector<std::uint64_t> matrix(n * n);  // [from * n + to]: elements
  std::vector<size_t> row(n, n * sizeof(std::uint64_t));
  HVD_RETURN_IF_ERROR(backends_.front()->allgatherv(
      TensorRef{op.sendCounts.data(), n * sizeof(std::uint64_t), DataType::kUInt8, Device::kCpu}, row, matrix.data()));
  const size_t me = static_cast<size_t>(rank_);
  if (backend.hasAlltoall()) {
    std::vector<size_t> bytesMatrix;
    size_t received = 0;
    op.gathered.counts.assign(n, 0);
    for (size_t k = 0; k < n * n; ++k) bytesMatrix.push_back(static_cast<size_t>(matrix[k]) * width);
    for (size_t k = 0; k < n; ++k) op.gathered.counts[k] = matrix[k * n + me], received += bytesMatrix[k * n + me];
    TensorRef send{const_cast<void*>(op.in), spec.count, spec.type, spec.device};
    if (spec.device == Device::kCpu) {
      op.gathered.bytes.resize(received);
      return backend.alltoallv(send, bytesMatrix, op.gathered.bytes.data());
    }
    auto result = backend.allocate(received, spec.count > 0 ? op.in : nullptr);
    if (!result) return result.status();
    HVD_RETURN_IF_ERROR(backend.alltoallv(send, bytesMatrix, result->memory.get()));
    HVD_RETURN_IF_ERROR(backend.finishCopies());
    op.gathered.device = spec.device;
    op.gathered.onDevice = std::move(*result);
    return Status::ok();
  }
  std::vector<size_t> bytesPerRank(n);
  size_t total = 0;
  for (size_t k = 0; k < n; ++k) {
    std::uint64_t sent = 0;
    for (size_t d = 0; d < n; ++d) sent += matrix[k * n + d];
    bytesPerRank[k] = static_cast<size_t>(sent) * width;
    total += bytesPerRank[k];
  }
  std::vector<std::byte> all(total);
  HVD_RETURN_IF_ERROR(backend.allgatherv(TensorRef{const_cast<void*>(op.in), spec.count, spec.type, spec.device},
                                         bytesPerRank, all.data()));
  op.gathered.counts.assign(n, 0);
  size_t received = 0;
  for (size_t k = 0; k < n; ++k) received += static_cast<size_t>(matrix[k * n + me]) * width;
  op.gathered.bytes.resize(received);
  size_t blockStart = 0, at = 0;
  for (size_t k = 0; k < n; ++k) {
    std::uint64_t before = 0;  // what rank k sends the ranks below this one, ahead of this one's rows
    for (size_t d = 0; d < me; ++d) before += matrix[k * n + d];
    const size_t bytes = static_cast<size_t>(matrix[k * n + me]) * width;
    if (bytes > 0) std::memcpy(op.gathered.bytes.data() + at, all.data() + blockStart + before * width, bytes);
    op.gathered.counts[k] = matrix[k * n + me];
    at += bytes;
    blockStart += bytesPerRank[k];
  }
  return Status::ok();
}

}  // namespace hvd::engine
