// runtime/backends/cuda/staged_backend.cc: device -> pinned host -> host backend -> device.
#include "runtime/backends/cuda/staged_backend.h"

#include <numeric>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"

namespace hvd::backends::cuda {
namespace {

class StagedBackend final : public CollectiveBackend {
 public:
  StagedBackend(const CudaDriver& driver, CollectiveBackend& host, std::chrono::milliseconds timeout)
      : driver_(driver), host_(host), timeout_(timeout) {}

  std::string_view name() const override { return "cuda-staged"; }
  bool supports(Device device) const override { return device == Device::kCuda; }

  Status allreduce(const TensorRef& data, ReduceOp op) override {
    if (data.count == 0) return Status::ok();
    HVD_RETURN_IF_ERROR(ensureDevice(data.data));
    auto staging = gpu_->pinned(data.bytes(), 0);
    if (!staging) return fail(staging.status());
    HVD_RETURN_IF_ERROR(toHost(*staging, data.data, data.bytes()));
    HVD_RETURN_IF_ERROR(host_.allreduce(TensorRef{*staging, data.count, data.type, Device::kCpu}, op));
    return toDevice(data.data, *staging, data.bytes());
  }

  Status broadcast(const TensorRef& data, int root) override {
    if (data.count == 0) return Status::ok();
    HVD_RETURN_IF_ERROR(ensureDevice(data.data));
    auto staging = gpu_->pinned(data.bytes(), 0);
    if (!staging) return fail(staging.status());
    HVD_RETURN_IF_ERROR(toHost(*staging, data.data, data.bytes()));
    HVD_RETURN_IF_ERROR(host_.broadcast(TensorRef{*staging, data.count, data.type, Device::kCpu}, root));
    return toDevice(data.data, *staging, data.bytes());
  }

  Status allgatherv(const TensorRef& mine, std::span<const size_t> bytesPerRank, void* out) override {
    size_t total = std::accumulate(bytesPerRank.begin(), bytesPerRank.end(), size_t{0});
    HVD_RETURN_IF_ERROR(ensureDevice(mine.count > 0 ? mine.data : out));
    auto send = gpu_->pinned(mine.bytes(), 0);
    if (!send) return fail(send.status());
    auto receive = gpu_->pinned(total, 1);
    if (!receive) return fail(receive.status());
    HVD_RETURN_IF_ERROR(toHost(*send, mine.data, mine.bytes()));
    HVD_RETURN_IF_ERROR(host_.allgatherv(TensorRef{*send, mine.count, mine.type, Device::kCpu}, bytesPerRank, *receive));
    return toDevice(out, *receive, total);
  }

  Status barrier() override { return host_.barrier(); }

  Result<std::byte*> scratch(size_t bytes) override {
    HVD_RETURN_IF_ERROR(ensureDevice(nullptr));
    return gpu_->scratch(bytes);
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    HVD_RETURN_IF_ERROR(ensureDevice(nullptr));
    return gpu_->copyAsync(dst, src, bytes);
  }
  Status finishCopies() override { return gpu_ ? gpu_->synchronize(timeout_) : Status::ok(); }

 private:
  // The GPU is the one the first tensor lives on (frameworks choose it; hvd does not).
  Status ensureDevice(const void* pointer) {
    if (!poisoned_.isOk()) return poisoned_;
    if (gpu_ && pointer != nullptr) {
      auto ordinal = deviceOf(driver_, pointer);
      if (!ordinal) return ordinal.status();
      if (*ordinal != gpu_->ordinal()) return wrongDevice(*ordinal);
    }
    if (gpu_) return gpu_->makeCurrent();
    int ordinal = 0;
    if (pointer != nullptr) {
      auto found = deviceOf(driver_, pointer);
      if (!found) return found.status();
      ordinal = *found;
    }
    auto opened = GpuDevice::open(driver_, ordinal);
    if (!opened) return fail(opened.status());
    gpu_ = std::move(*opened);
    return Status::ok();
  }
  Status wrongDevice(int ordinal) const {
    return Status(Errc::kInvalidUsage, "a tensor on GPU " + std::to_string(ordinal) + ", but this rank's collectives run on " +
                                           gpu_->description())
        .withHint("keep one GPU per rank (torch.cuda.set_device(hvd.local_rank()))");
  }
  Status toHost(void* host, const void* device, size_t bytes) {
    if (Status s = gpu_->copyAsync(host, device, bytes); !s.isOk()) return fail(s);
    if (Status s = gpu_->synchronize(timeout_); !s.isOk()) return fail(s);
    return Status::ok();
  }
  Status toDevice(void* device, const void* host, size_t bytes) {
    if (Status s = gpu_->copyAsync(device, host, bytes); !s.isOk()) return fail(s);
    if (Status s = gpu_->synchronize(timeout_); !s.isOk()) return fail(s);
    return Status::ok();
  }
  Status fail(Status s) {
    if (poisoned_.isOk()) poisoned_ = s;
    return s;
  }

  const CudaDriver& driver_;
  CollectiveBackend& host_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<GpuDevice> gpu_;
  Status poisoned_;
};

}  // namespace

Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup) {
  auto driver = CudaDriver::load();
  if (!driver) return driver.status();
  return std::unique_ptr<CollectiveBackend>(new StagedBackend(**driver, *setup.hostBackend, setup.timeout));
}

}  // namespace hvd::backends::cuda
