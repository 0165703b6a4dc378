// bench/gpu_busbw.cc: GPU collectives in nccl-tests' columns, beside their references, in
// one run: hvd's allreduce (and 256 small ones fused: rows "-fused", beside "-one" of
// their total), broadcast, reducescatter and alltoall (rows "-a2a") on device
// buffers (through NCCL, or the staged path: HOROVOD_GPU_OPERATIONS), NCCL itself called
// directly (one rank), a host<->device round trip through pinned memory (the staged path's
// floor) and a device-to-device copy (the GPU's memory bandwidth, read + write counted).
// Run as ranks under hvdrun:
//   hvdrun -np 1 gpu_busbw                        # NCCL, with the direct-NCCL and copy rows
//   HOROVOD_GPU_OPERATIONS=cpu hvdrun -np 4 --oversubscribe-gpus gpu_busbw
// busbw = algbw x 2(n-1)/n for allreduce (0 on one rank, as nccl-tests prints), x (n-1)/n
// for reducescatter and alltoall, x 1 for broadcast and copies. #wrong counts elements off
// after the last timed iteration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/nccl/nccl_library.h"

namespace {

using hvd::backends::cuda::CudaDriver;
using hvd::backends::nccl::NcclLibrary;
using Clock = std::chrono::steady_clock;

const CudaDriver* cu = nullptr;
CUstream stream = nullptr;

int itersFor(size_t bytes) { return bytes <= (1u << 20) ? 200 : bytes <= (64u << 20) ? 40 : 10; }

void row(const char* what, size_t bytes, const char* redop, int root, double us, double factor, long wrong) {
  if (hvd::rank() != 0) return;
  double algbw = static_cast<double>(bytes) / us / 1e3;  // GB/s
  std::printf("%-12s %12zu %12zu %6s %6s %6d %10.2f %8.2f %8.2f %7ld\n", what, bytes, bytes / 4, "float", redop, root, us,
              algbw, algbw * factor, wrong);
}

template <typename Fn>
double timeUs(size_t bytes, Fn fn) {
  for (int i = 0; i < 3; ++i) fn();
  int iters = itersFor(bytes);
  if (hvd::size() > 1) (void)hvd::barrier();
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  cu->cuStreamSynchronize(stream);
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
}

long countWrong(CUdeviceptr buf, size_t count, float want) {
  std::vector<float> host(count);
  cu->cuMemcpy(reinterpret_cast<CUdeviceptr>(host.data()), buf, count * 4);
  return static_cast<long>(std::count_if(host.begin(), host.end(), [&](float v) { return v != want; }));
}

void fill(CUdeviceptr buf, size_t count, float v) {
  std::vector<float> host(count, v);
  cu->cuMemcpy(buf, reinterpret_cast<CUdeviceptr>(host.data()), count * 4);
  // From pageable memory cuMemcpy may return before its DMA lands, and hvd's copies run on
  // a stream of its own that does not wait for it: the staged rows of 8 B to 4 KiB read
  // stale values (every element wrong, on an H100).
  cu->cuStreamSynchronize(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  size_t maxBytes = 256u << 20;
  if (argc > 2 && std::string(argv[1]) == "--max-mib") maxBytes = std::stoul(argv[2]) << 20;
  auto driver = CudaDriver::load();
  if (!driver) {
    std::printf("SKIPPED: %s\n", driver.status().message().c_str());
    return 77;
  }
  cu = *driver;
  if (hvd::Status s = hvd::init(); !s.isOk()) {
    std::fprintf(stderr, "gpu_busbw: init: %s\n", s.message().c_str());
    return 1;
  }
  const char* own = std::getenv("HVD_LOCAL_GPU");  // the rank's GPU among those it sees
  if (hvd::Status s = cu->usePrimaryContext(own != nullptr ? std::atoi(own) : 0); !s.isOk()) {
    std::fprintf(stderr, "gpu_busbw: %s\n", s.message().c_str());
    return 1;
  }
  cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  int n = hvd::size();
  CUdeviceptr buf = 0, other = 0;
  void* pinned = nullptr;
  cu->cuMemAlloc(&buf, maxBytes);
  cu->cuMemAlloc(&other, maxBytes);
  cu->cuMemAllocHost(&pinned, maxBytes);
  char name[128] = {};
  CUdevice device = 0;
  cu->cuDeviceGet(&device, 0);
  cu->cuDeviceGetName(name, sizeof name, device);
  if (hvd::rank() == 0) {
    std::printf("# %d rank(s) on %s, driver CUDA %s; GPU tensors through %s\n", n, name, cu->version.c_str(),
                hvd::gpuOperationsBackend());
    std::printf("%-12s %12s %12s %6s %6s %6s %10s %8s %8s %7s\n", "# path", "size", "count", "type", "redop", "root",
                "time(us)", "algbw", "busbw", "#wrong");
  }
  void* p = reinterpret_cast<void*>(buf);
  std::string path = std::string("hvd-") + hvd::gpuOperationsBackend();
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
    size_t count = bytes / 4;
    fill(buf, count, 1.0f);
    // Sums grow each iteration; a fresh fill before the check keeps #wrong meaningful.
    double us = timeUs(bytes, [&] { (void)hvd::allreduce(p, p, count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum, hvd::Device::kCuda); });
    fill(buf, count, 1.0f);
    (void)hvd::allreduce(p, p, count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum, hvd::Device::kCuda);
    row(path.c_str(), bytes, "sum", -1, us, 2.0 * (n - 1) / n, countWrong(buf, count, static_cast<float>(n)));
  }
  // A training step's gradients: 256 named async allreduces ready together, which the
  // engine fuses (each tensor copied into the fusion buffer and back out), in rows "-fused",
  // beside one allreduce of their total size ("-one"). Averages keep every value 1.
  constexpr size_t kTensors = 256;
  std::vector<std::string> names;
  for (size_t i = 0; i < kTensors; ++i) names.push_back("grad." + std::to_string(i));
  for (size_t each : {size_t{256}, size_t{4096}, size_t{65536}}) {
    const size_t total = each * kTensors;
    if (total > maxBytes) break;
    fill(buf, total / 4, 1.0f);
    double fused = timeUs(total, [&] {
      std::vector<hvd::Handle> handles;
      for (size_t i = 0; i < kTensors; ++i) {
        void* t = reinterpret_cast<void*>(buf + i * each);
        auto h = hvd::allreduceAsync(names[i], t, t, each / 4, hvd::DataType::kFloat32, hvd::ReduceOp::kAverage,
                                     hvd::Device::kCuda);
        if (h) handles.push_back(*h);
      }
      for (hvd::Handle h : handles) (void)hvd::synchronize(h);
    });
    row((path + "-fused").c_str(), total, "avg", -1, fused, 2.0 * (n - 1) / n, countWrong(buf, total / 4, 1.0f));
    double one = timeUs(total, [&] {
      (void)hvd::allreduce(p, p, total / 4, hvd::DataType::kFloat32, hvd::ReduceOp::kAverage, hvd::Device::kCuda);
    });
    row((path + "-one").c_str(), total, "avg", -1, one, 2.0 * (n - 1) / n, countWrong(buf, total / 4, 1.0f));
  }
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
    size_t count = bytes / 4;
    fill(buf, count, static_cast<float>(hvd::rank() + 1));
    double us = timeUs(bytes, [&] { (void)hvd::broadcast(p, count, hvd::DataType::kFloat32, 0, hvd::Device::kCuda); });
    row(path.c_str(), bytes, "none", 0, us, 1.0, countWrong(buf, count, 1.0f));
  }
  // reducescatter and alltoall in nccl-tests' terms: size is every rank's whole input,
  // busbw = algbw x (n-1)/n. The alltoall's rows stay on the GPU, in memory hvd allocates
  // for each result (Gathered::onDevice), freed as each result is dropped.
  for (size_t bytes = 8 * static_cast<size_t>(n); bytes <= maxBytes; bytes *= 8) {
    size_t count = bytes / 4 / static_cast<size_t>(n) * static_cast<size_t>(n);
    fill(buf, count, 1.0f);
    void* out = reinterpret_cast<void*>(other);
    double us = timeUs(bytes, [&] {
      auto h = hvd::reducescatterAsync("rs", p, out, count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum, {},
                                       hvd::Device::kCuda);
      if (h) (void)hvd::synchronize(*h);
    });
    row(path.c_str(), count * 4, "sum", -1, us, static_cast<double>(n - 1) / n,
        countWrong(other, count / static_cast<size_t>(n), static_cast<float>(n)));
  }
  for (size_t bytes = 8 * static_cast<size_t>(n); bytes <= maxBytes; bytes *= 8) {
    size_t count = bytes / 4 / static_cast<size_t>(n) * static_cast<size_t>(n);
    fill(buf, count, static_cast<float>(hvd::rank() + 1));
    auto alltoall = [&]() -> hvd::Result<hvd::Gathered> {
      auto h = hvd::alltoallAsync("a2a", p, count, hvd::DataType::kFloat32, {}, {}, hvd::Device::kCuda);
      if (!h) return h.status();
      return hvd::synchronizeAllgather(*h);
    };
    double us = timeUs(bytes, [&] { (void)alltoall(); });
    // Checked once, untimed: block k holds rank k's value.
    long wrong = static_cast<long>(count);
    if (auto got = alltoall(); got && got->onDeviceBytes == count * 4 && got->onDevice != nullptr) {
      std::vector<float> values(count);
      cu->cuMemcpy(reinterpret_cast<CUdeviceptr>(values.data()), reinterpret_cast<CUdeviceptr>(got->onDevice.get()),
                   count * 4);
      const size_t block = count / static_cast<size_t>(n);
      wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += values[i] != static_cast<float>(i / block + 1);
    }
    row((path + "-a2a").c_str(), count * 4, "none", -1, us, static_cast<double>(n - 1) / n, wrong);
  }
  if (n == 1) {
    // NCCL alone on the same buffer and a stream of our own: what hvd adds on top of it.
    auto nccl = NcclLibrary::load();
    if (nccl) {
      const NcclLibrary& l = **nccl;
      ncclUniqueId id{};
      ncclComm_t comm = nullptr;
      l.ncclGetUniqueId(&id);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      l.ncclCommInitRankConfig(&comm, 1, id, 0, &config);
      for (size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
        size_t count = bytes / 4;
        fill(buf, count, 1.0f);
        double us = timeUs(bytes, [&] {
          l.ncclAllReduce(p, p, count, ncclFloat32, ncclSum, comm, stream);
          cu->cuStreamSynchronize(stream);
        });
        row("nccl-direct", bytes, "sum", -1, us, 0.0, countWrong(buf, count, 1.0f));
      }
      l.ncclCommDestroy(comm);
    }
    for (size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
      double us = timeUs(bytes, [&] {
        cu->cuMemcpyDtoHAsync(pinned, buf, bytes, stream);
        cu->cuMemcpyHtoDAsync(buf, pinned, bytes, stream);
        cu->cuStreamSynchronize(stream);
      });
      row("h2d+d2h", bytes, "none", -1, us, 1.0, 0);  // algbw: bytes moved each way per round trip
    }
    for (size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
      double us = timeUs(bytes, [&] {
        cu->cuMemcpyDtoDAsync(other, buf, bytes, stream);
        cu->cuStreamSynchronize(stream);
      });
      row("d2d-copy", bytes, "none", -1, us, 2.0, 0);  // busbw: read + write
    }
  }
  cu->cuMemFree(buf);
  cu->cuMemFree(other);
  cu->cuMemFreeHost(pinned);
  hvd::shutdown();
  return 0;
}
