// runtime/backends/nccl/nccl_backend.cc: a lazily made, non-blocking NCCL communicator.
#include "runtime/backends/nccl/nccl_backend.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"
#include "runtime/backends/nccl/nccl_library.h"
#include "runtime/backends/nccl/nccl_types.h"

namespace hvd::backends::nccl {
namespace {

using cuda::CudaDriver;
using cuda::GpuDevice;

class NcclBackend final : public CollectiveBackend {
 public:
  NcclBackend(const NcclLibrary& nccl, const CudaDriver& driver, const BackendSetup& setup)
      : nccl_(nccl), driver_(driver), host_(*setup.hostBackend), rank_(setup.rank), size_(setup.size),
        timeout_(setup.timeout) {}

  ~NcclBackend() override {
    if (comm_ == nullptr) return;
    (void)gpu_->makeCurrent();
    // A communicator that failed may have peers that will never answer: abort, not destroy.
    if (poisoned_.isOk()) {
      nccl_.ncclCommDestroy(comm_);
    } else {
      nccl_.ncclCommAbort(comm_);
    }
  }

  std::string_view name() const override { return "nccl"; }
  bool supports(Device device) const override { return device == Device::kCuda; }

  Status canReduce(DataType type, ReduceOp op) const override { return ncclReductionOf(type, op).status(); }

  Status allreduce(const TensorRef& data, ReduceOp op) override {
    HVD_RETURN_IF_ERROR(ensureComm(data.data));
    if (data.count == 0) return Status::ok();
    // Refused alike on every rank (the same agreed spec), so no rank waits in NCCL alone.
    auto reduction = ncclReductionOf(data.type, op);
    if (!reduction) return reduction.status();
    return run("allreduce of " + std::to_string(data.bytes()) + " bytes", [&] {
      return nccl_.ncclAllReduce(data.data, data.data, data.count, reduction->type, reduction->op, comm_,
                                 gpu_->stream());
    });
  }

  Status broadcast(const TensorRef& data, int root) override {
    HVD_RETURN_IF_ERROR(ensureComm(data.data));
    if (data.count == 0) return Status::ok();
    return run("broadcast from rank " + std::to_string(root), [&] {
      return nccl_.ncclBroadcast(data.data, data.data, data.bytes(), ncclUint8, root, comm_, gpu_->stream());
    });
  }

  Status allgatherv(const TensorRef& mine, std::span<const size_t> bytesPerRank, void* out) override {
    HVD_RETURN_IF_ERROR(ensureComm(mine.count > 0 ? mine.data : out));
    size_t total = std::accumulate(bytesPerRank.begin(), bytesPerRank.end(), size_t{0});
    if (total == 0) return Status::ok();
    bool equal = std::all_of(bytesPerRank.begin(), bytesPerRank.end(), [&](size_t b) { return b == bytesPerRank[0]; });
    if (equal) {
      return run("allgather", [&] {
        return nccl_.ncclAllGather(mine.data, out, bytesPerRank[0], ncclUint8, comm_, gpu_->stream());
      });
    }
    // Different shares: one broadcast per rank into its place, grouped into one launch.
    return run("allgatherv", [&] {
      ncclResult_t rc = nccl_.ncclGroupStart();
      size_t at = 0;
      for (int r = 0; r < size_ && (rc == ncclSuccess || rc == ncclInProgress); ++r) {
        size_t bytes = bytesPerRank[static_cast<size_t>(r)];
        auto* place = static_cast<std::byte*>(out) + at;
        if (bytes > 0) rc = nccl_.ncclBroadcast(r == rank_ ? mine.data : place, place, bytes, ncclUint8, r, comm_, gpu_->stream());
        at += bytes;
      }
      ncclResult_t end = nccl_.ncclGroupEnd();
      return rc == ncclSuccess || rc == ncclInProgress ? end : rc;
    });
  }

  // Horovod's split gives the first ranks one row more where the rows do not divide
  // evenly; ncclReduceScatter takes equal parts only, so uneven parts go as one reduce per
  // rank, rooted at the rank that keeps that part, in one group (Horovod does the same).
  bool hasReducescatter() const override { return true; }
  Status reducescatter(const TensorRef& data, std::span<const size_t> countsPerRank, ReduceOp op, void* out) override {
    HVD_RETURN_IF_ERROR(ensureComm(data.data));
    if (data.count == 0) return Status::ok();
    auto reduction = ncclReductionOf(data.type, op);
    if (!reduction) return reduction.status();
    const size_t width = dataTypeSize(data.type);
    const bool equal =
        std::all_of(countsPerRank.begin(), countsPerRank.end(), [&](size_t c) { return c == countsPerRank[0]; });
    // Alone, a rank's part is its whole tensor, whatever the op. (On an H200, NCCL's
    // one-rank reduce-scatter with ncclAvg wrote only the first 2^20 elements of 2^20 + 3.)
    if (size_ == 1) {
      HVD_RETURN_IF_ERROR(fail(gpu_->copyAsync(out, data.data, data.bytes())));
      return run("reducescatter of " + std::to_string(data.bytes()) + " bytes on one rank", [] { return ncclSuccess; });
    }
    if (equal) {
      return run("reducescatter of " + std::to_string(data.bytes()) + " bytes", [&] {
        return nccl_.ncclReduceScatter(data.data, out, countsPerRank[0], reduction->type, reduction->op, comm_,
                                       gpu_->stream());
      });
    }
    return run("reducescatter of " + std::to_string(data.bytes()) + " bytes in uneven parts", [&] {
      ncclResult_t rc = nccl_.ncclGroupStart();
      size_t at = 0;
      for (int r = 0; r < size_ && (rc == ncclSuccess || rc == ncclInProgress); ++r) {
        const size_t count = countsPerRank[static_cast<size_t>(r)];
        const auto* part = static_cast<const std::byte*>(data.data) + at * width;
        // Only the root's receive buffer is written; the others pass their own part.
        void* into = r == rank_ ? out : const_cast<std::byte*>(part);
        if (count > 0) {
          rc = nccl_.ncclReduce(part, into, count, reduction->type, reduction->op, r, comm_, gpu_->stream());
        }
        at += count;
      }
      ncclResult_t end = nccl_.ncclGroupEnd();
      return rc == ncclSuccess || rc == ncclInProgress ? end : rc;
    });
  }

  // One send and one receive per peer with anything to move, in one group (NCCL pairs them
  // up without deadlock); this rank's own block is a copy on the same stream.
  bool hasAlltoall() const override { return true; }
  Status alltoallv(const TensorRef& send, std::span<const size_t> bytesMatrix, void* out) override {
    HVD_RETURN_IF_ERROR(ensureComm(send.count > 0 ? send.data : out));
    const size_t n = static_cast<size_t>(size_), me = static_cast<size_t>(rank_);
    std::vector<size_t> sendAt(n + 1, 0), receiveAt(n + 1, 0);
    for (size_t p = 0; p < n; ++p) {
      sendAt[p + 1] = sendAt[p] + bytesMatrix[me * n + p];
      receiveAt[p + 1] = receiveAt[p] + bytesMatrix[p * n + me];
    }
    auto* from = static_cast<const std::byte*>(send.data);
    auto* into = static_cast<std::byte*>(out);
    const size_t own = bytesMatrix[me * n + me];
    if (own > 0) HVD_RETURN_IF_ERROR(fail(gpu_->copyAsync(into + receiveAt[me], from + sendAt[me], own)));
    return run("alltoall of " + std::to_string(send.bytes()) + " bytes", [&] {
      ncclResult_t rc = nccl_.ncclGroupStart();
      for (size_t p = 0; p < n && (rc == ncclSuccess || rc == ncclInProgress); ++p) {
        if (p == me) continue;
        const int peer = static_cast<int>(p);
        const size_t sending = bytesMatrix[me * n + p], receiving = bytesMatrix[p * n + me];
        if (sending > 0) rc = nccl_.ncclSend(from + sendAt[p], sending, ncclUint8, peer, comm_, gpu_->stream());
        if (receiving > 0 && (rc == ncclSuccess || rc == ncclInProgress)) {
          rc = nccl_.ncclRecv(into + receiveAt[p], receiving, ncclUint8, peer, comm_, gpu_->stream());
        }
      }
      ncclResult_t end = nccl_.ncclGroupEnd();
      return rc == ncclSuccess || rc == ncclInProgress ? end : rc;
    });
  }

  Status barrier() override { return host_.barrier(); }

  // NCCL reduces element by element only, so Adasum (which needs each tensor's dot product
  // and norms) runs where the host backend runs it, through pinned host memory, as the
  // staged path does: a user's op=Adasum works on GPU tensors without moving every other
  // collective off NCCL. Not Horovod's GPU split (a NCCL sum within a node, then Adasum
  // across nodes): the tree is the host's over every rank (docs/runtime.md "Adasum").
  bool hasAdasum() const override { return host_.hasAdasum(); }
  Status adasum(const TensorRef& data, std::span<const size_t> tensorCounts) override {
    HVD_RETURN_IF_ERROR(ensureComm(data.data));
    if (data.count == 0) return Status::ok();
    auto staging = gpu_->pinned(data.bytes(), 0);
    if (!staging) return fail(staging.status());
    HVD_RETURN_IF_ERROR(fail(gpu_->copyAsync(*staging, data.data, data.bytes())));
    HVD_RETURN_IF_ERROR(fail(gpu_->synchronize(timeout_)));
    HVD_RETURN_IF_ERROR(fail(host_.adasum(TensorRef{*staging, data.count, data.type, Device::kCpu}, tensorCounts)));
    HVD_RETURN_IF_ERROR(fail(gpu_->copyAsync(data.data, *staging, data.bytes())));
    return fail(gpu_->synchronize(timeout_));
  }

  Result<std::byte*> scratch(size_t bytes, const void* like) override {
    HVD_RETURN_IF_ERROR(ensureComm(like));
    return gpu_->scratch(bytes);
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    HVD_RETURN_IF_ERROR(ensureComm(src));
    return gpu_->copyAsync(dst, src, bytes);
  }
  Status copyMany(std::span<const DeviceCopy> copies) override {
    if (copies.empty()) return Status::ok();
    HVD_RETURN_IF_ERROR(ensureComm(copies.front().src));
    return gpu_->copyMany(copies);
  }
  Status finishCopies() override { return gpu_ ? gpu_->synchronize(timeout_) : Status::ok(); }
  Result<DeviceBuffer> allocate(size_t bytes, const void* like) override {
    HVD_RETURN_IF_ERROR(ensureComm(like));
    return gpu_->allocate(bytes);
  }
  Status useStream(void* stream) override {
    requested_ = static_cast<CUstream>(stream);
    return Status::ok();
  }
  Result<bool> waitForStream(void* stream) override {
    return cuda::waitForStream(published_, static_cast<CUstream>(stream));
  }

 private:
  // The communicator, made at the first GPU call on the GPU of `pointer` (device 0 when
  // the first call carries no tensor). Collective: every rank reaches it in the same call.
  Status ensureComm(const void* pointer) {
    if (!poisoned_.isOk()) return poisoned_;
    if (comm_ != nullptr) {
      if (pointer != nullptr) {
        auto ordinal = cuda::deviceOf(driver_, pointer);
        if (!ordinal) return ordinal.status();
        if (*ordinal != gpu_->ordinal()) {
          return Status(Errc::kInvalidUsage, "a tensor on GPU " + std::to_string(*ordinal) +
                                                 ", but this rank's NCCL communicator is on " + gpu_->description())
              .withHint("keep one GPU per rank (torch.cuda.set_device(hvd.local_rank()))");
        }
      }
      gpu_->useStream(requested_);
      return gpu_->makeCurrent();
    }
    // The id goes out first, whatever this rank's tensor: every rank takes part in the
    // broadcast, so one rank's bad pointer cannot leave the others waiting in it.
    ncclUniqueId id{};
    if (rank_ == 0) HVD_RETURN_IF_ERROR(fail(nccl_.check(nccl_.ncclGetUniqueId(&id), "ncclGetUniqueId")));
    HVD_RETURN_IF_ERROR(fail(host_.broadcast(TensorRef{&id, sizeof id, DataType::kUInt8, Device::kCpu}, 0)
                                 .withContext("sending NCCL's unique id")));
    int ordinal = 0;
    if (pointer != nullptr) {
      auto found = cuda::deviceOf(driver_, pointer);
      if (!found) return fail(found.status());
      ordinal = *found;
    }
    auto gpu = GpuDevice::open(driver_, ordinal);
    if (!gpu) return fail(gpu.status());
    gpu_ = std::move(*gpu);
    gpu_->useStream(requested_);
    published_.store(gpu_.get(), std::memory_order_release);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that a rank that never joins costs a timeout, not a hang
    ncclComm_t comm = nullptr;
    Status s = nccl_.check(nccl_.ncclCommInitRankConfig(&comm, size_, id, rank_, &config),
                           "creating the NCCL communicator on " + gpu_->description());
    comm_ = comm;
    if (s.isOk()) s = waitForComm("creating the NCCL communicator on " + gpu_->description());
    return fail(s);
  }

  // Non-blocking communicators answer ncclInProgress until an operation is enqueued.
  Status waitForComm(const std::string& what) {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      HVD_RETURN_IF_ERROR(nccl_.check(nccl_.ncclCommGetAsyncError(comm_, &state), what));
      if (state != ncclInProgress) return nccl_.check(state, what);
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status(Errc::kTimeout, what + " did not finish within " + std::to_string(timeout_.count() / 1000) +
                                          " s (HVD_TIMEOUT): a rank did not join");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  template <typename Launch>
  Status run(const std::string& what, Launch launch) {
    Status s = nccl_.check(launch(), "NCCL " + what);
    if (s.isOk()) s = waitForComm("NCCL " + what);
    if (s.isOk()) {
      s = gpu_->synchronize(timeout_, [&] {
        ncclResult_t state = ncclSuccess;
        nccl_.ncclCommGetAsyncError(comm_, &state);
        return state == ncclInProgress ? Status::ok() : nccl_.check(state, "NCCL " + what);
      });
    }
    return fail(s);
  }

  Status fail(Status s) {
    if (!s.isOk() && poisoned_.isOk()) poisoned_ = s;
    return s;
  }

  const NcclLibrary& nccl_;
  const CudaDriver& driver_;
  CollectiveBackend& host_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<GpuDevice> gpu_;
  std::atomic<GpuDevice*> published_{nullptr};  // gpu_, for waitForStream's threads
  ncclComm_t comm_ = nullptr;
  CUstream requested_ = nullptr;  // the caller's stream (useStream), taken at each call
  Status poisoned_;
};

}  // namespace

Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup) {
  auto library = NcclLibrary::load();
  if (!library) return library.status();
  auto driver = CudaDriver::load();
  if (!driver) return driver.status();
  return std::unique_ptr<CollectiveBackend>(new NcclBackend(**library, **driver, setup));
}

}  // namespace hvd::backends::nccl
