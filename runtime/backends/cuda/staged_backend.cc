// runtime/backends/cuda/staged_backend.cc: device -> pinned host -> host backend -> device.
#include "runtime/backends/cuda/staged_backend.h"

#include <numeric>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"

namespace hvd::backends::cuda {
namespace {

class StagedBackend final : public CollectiveBackend {
 public:
  StagedBackend(std::unique_ptr<StagingDevice> device, CollectiveBackend& host, int rank)
      : device_(std::move(device)), host_(host), rank_(static_cast<size_t>(rank)) {}

  std::string_view name() const override { return "cuda-staged"; }
  bool supports(Device device) const override { return device == Device::kCuda; }

  Status allreduce(const TensorRef& data, ReduceOp op) override {
    return inPlace(data, [&](const TensorRef& staged) { return host_.allreduce(staged, op); });
  }

  Status broadcast(const TensorRef& data, int root) override {
    return inPlace(data, [&](const TensorRef& staged) { return host_.broadcast(staged, root); });
  }

  Status allgatherv(const TensorRef& mine, std::span<const size_t> bytesPerRank, void* out) override {
    const size_t total = std::accumulate(bytesPerRank.begin(), bytesPerRank.end(), size_t{0});
    return staged(mine, total, out, [&](const TensorRef& send, std::byte* receive) {
      return host_.allgatherv(send, bytesPerRank, receive);
    });
  }

  // Adasum runs where the host backend runs it (NCCL has none).
  bool hasAdasum() const override { return host_.hasAdasum(); }
  Status adasum(const TensorRef& data, std::span<const size_t> tensorCounts) override {
    return inPlace(data, [&](const TensorRef& staged) { return host_.adasum(staged, tensorCounts); });
  }

  // Both run on the host backend's own primitive, so the staged path has them where it has.
  bool hasReducescatter() const override { return host_.hasReducescatter(); }
  Status reducescatter(const TensorRef& data, std::span<const size_t> countsPerRank, ReduceOp op, void* out) override {
    const size_t mine = countsPerRank[rank_] * dataTypeSize(data.type);
    return staged(data, mine, out, [&](const TensorRef& send, std::byte* receive) {
      return host_.reducescatter(send, countsPerRank, op, receive);
    });
  }

  bool hasAlltoall() const override { return host_.hasAlltoall(); }
  Status alltoallv(const TensorRef& send, std::span<const size_t> bytesMatrix, void* out) override {
    size_t n = 0;  // the matrix is n by n
    while (n * n < bytesMatrix.size()) ++n;
    size_t received = 0;
    for (size_t from = 0; from < n; ++from) received += bytesMatrix[from * n + rank_];
    return staged(send, received, out, [&](const TensorRef& staging, std::byte* receive) {
      return host_.alltoallv(staging, bytesMatrix, receive);
    });
  }

  Status barrier() override { return host_.barrier(); }

  Result<std::byte*> scratch(size_t bytes, const void* like) override {
    HVD_RETURN_IF_ERROR(fail(device_->select(like)));
    return device_->scratch(bytes);
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    HVD_RETURN_IF_ERROR(fail(device_->select(src)));
    return fail(device_->copy(dst, src, bytes));
  }
  Status copyMany(std::span<const DeviceCopy> copies) override {
    if (copies.empty()) return Status::ok();
    HVD_RETURN_IF_ERROR(fail(device_->select(copies.front().src)));
    return fail(device_->copyMany(copies));
  }
  Status finishCopies() override { return fail(device_->finish()); }
  Result<DeviceBuffer> allocate(size_t bytes, const void* like) override {
    HVD_RETURN_IF_ERROR(fail(device_->select(like)));
    return device_->allocate(bytes);
  }
  Status useStream(void* stream) override {
    device_->useStream(stream);
    return Status::ok();
  }
  Result<bool> waitForStream(void* stream) override { return device_->waitForStream(stream); }

 private:
  // Stages `data` out, runs `collective` on the host copy, stages the result back.
  template <typename Collective>
  Status inPlace(const TensorRef& data, Collective collective) {
    if (!poisoned_.isOk()) return poisoned_;
    HVD_RETURN_IF_ERROR(fail(device_->select(data.data)));
    if (data.count == 0) return Status::ok();
    auto staging = device_->pinned(data.bytes(), 0);
    if (!staging) return fail(staging.status());
    HVD_RETURN_IF_ERROR(fail(device_->copy(*staging, data.data, data.bytes())));
    HVD_RETURN_IF_ERROR(fail(device_->finish()));
    HVD_RETURN_IF_ERROR(collective(TensorRef{*staging, data.count, data.type, Device::kCpu}));
    HVD_RETURN_IF_ERROR(fail(device_->copy(data.data, *staging, data.bytes())));
    return fail(device_->finish());
  }

  // Out of place (allgather, reducescatter, alltoall): `data` staged out, `collective` from
  // it into `outBytes` of host memory, those staged back into `out`.
  template <typename Collective>
  Status staged(const TensorRef& data, size_t outBytes, void* out, Collective collective) {
    if (!poisoned_.isOk()) return poisoned_;
    HVD_RETURN_IF_ERROR(fail(device_->select(data.count > 0 ? data.data : out)));
    auto send = device_->pinned(data.bytes(), 0);
    if (!send) return fail(send.status());
    auto receive = device_->pinned(outBytes, 1);
    if (!receive) return fail(receive.status());
    HVD_RETURN_IF_ERROR(fail(device_->copy(*send, data.data, data.bytes())));
    HVD_RETURN_IF_ERROR(fail(device_->finish()));
    HVD_RETURN_IF_ERROR(collective(TensorRef{*send, data.count, data.type, Device::kCpu}, *receive));
    HVD_RETURN_IF_ERROR(fail(device_->copy(out, *receive, outBytes)));
    return fail(device_->finish());
  }

  // A device failure poisons the backend (the host backend poisons itself on its own).
  Status fail(Status s) {
    if (!s.isOk() && poisoned_.isOk() && s.code() != Errc::kInvalidUsage) poisoned_ = s;
    return s;
  }

  std::unique_ptr<StagingDevice> device_;
  CollectiveBackend& host_;
  size_t rank_;
  Status poisoned_;
};

// The driver's GPU: the one the first tensor lives on (frameworks choose it; hvd does not).
class DriverStaging final : public StagingDevice {
 public:
  DriverStaging(const CudaDriver& driver, std::chrono::milliseconds timeout) : driver_(driver), timeout_(timeout) {}

  Status select(const void* pointer) override {
    int ordinal = gpu_ ? gpu_->ordinal() : 0;
    if (pointer != nullptr) {
      auto found = deviceOf(driver_, pointer);
      if (!found) return found.status();
      if (gpu_ && *found != gpu_->ordinal()) {
        return Status(Errc::kInvalidUsage, "a tensor on GPU " + std::to_string(*found) +
                                               ", but this rank's collectives run on " + gpu_->description())
            .withHint("keep one GPU per rank (torch.cuda.set_device(hvd.local_rank()))");
      }
      ordinal = *found;
    }
    if (!gpu_) {
      auto opened = GpuDevice::open(driver_, ordinal);
      if (!opened) return opened.status();
      gpu_ = std::move(*opened);
      published_.store(gpu_.get(), std::memory_order_release);
    }
    gpu_->useStream(requested_);
    return gpu_->makeCurrent();
  }
  void useStream(void* stream) override { requested_ = static_cast<CUstream>(stream); }
  Result<bool> waitForStream(void* stream) override {
    return cuda::waitForStream(published_, static_cast<CUstream>(stream));
  }
  Result<std::byte*> pinned(size_t bytes, int slot) override { return gpu_->pinned(bytes, slot); }
  Result<std::byte*> scratch(size_t bytes) override { return gpu_->scratch(bytes); }
  Result<DeviceBuffer> allocate(size_t bytes) override { return gpu_->allocate(bytes); }
  Status copy(void* dst, const void* src, size_t bytes) override { return gpu_->copyAsync(dst, src, bytes); }
  Status copyMany(std::span<const DeviceCopy> copies) override { return gpu_->copyMany(copies); }
  Status finish() override { return gpu_ ? gpu_->synchronize(timeout_) : Status::ok(); }

 private:
  const CudaDriver& driver_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<GpuDevice> gpu_;
  std::atomic<GpuDevice*> published_{nullptr};  // gpu_, for waitForStream's threads
  CUstream requested_ = nullptr;
};

}  // namespace

std::unique_ptr<CollectiveBackend> makeStagedBackend(std::unique_ptr<StagingDevice> device, CollectiveBackend& host,
                                                     int rank) {
  return std::make_unique<StagedBackend>(std::move(device), host, rank);
}

Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup) {
  auto driver = CudaDriver::load();
  if (!driver) return driver.status();
  return makeStagedBackend(std::make_unique<DriverStaging>(**driver, setup.timeout), *setup.hostBackend, setup.rank);
}

}  // namespace hvd::backends::cuda
