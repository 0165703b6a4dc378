// bench/gpu_copy_floor.cc: the device side of a staged GPU call alone, no runtime: N
// processes share GPU 0 and, in lockstep as a collective's ranks are, copy a tensor to
// pinned host memory, wait, meet at a barrier (where the host collective would run), bring
// it back, wait, meet again. Prints per process count, way and size the median and p90 of a
// round trip on process 0, the median of each wait, and (spin) the queries per wait.
// The ways (--ways, default hvd):
//   hvd     GpuDevice::copyAsync and synchronize, as the staged backend does (spins, then
//           sleeps 50 us between queries)
//   spin    the same copies, the stream queried without sleeping; block: cuStreamSynchronize
//   htod, 2d, batch, batch0   the copy back by cuMemcpyHtoDAsync, cuMemcpy2DAsync,
//           cuMemcpyBatchAsync hinting the copy engines, and without the hint
//   bounceN a copy of N bytes into a device buffer, then the tensor's bytes on the device
//   writes  the stream's own 64-bit write operations (cuStreamBatchMemOp), 8 bytes each, to 4 KiB
//   memset  cuMemsetD8Async in place of the copy back (what the GPU does for a memset)
// What it showed on an H200 (docs/benchmarks.md): processes time-slicing the GPU wait about
// 0.15 ms for each one's copy back under 32 KiB, whatever the call or the wait, and not
// under MPS.
//   gpu_copy_floor [--np 1,2,4] [--iters 300] [--ways hvd,spin,block,...]
#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"

namespace {

using hvd::backends::cuda::CudaDriver;
using hvd::backends::cuda::GpuDevice;
using Clock = std::chrono::steady_clock;

constexpr int kMaxIters = 10000;

struct alignas(64) Barrier {
  std::atomic<int> count{0};
  std::atomic<int> generation{0};
};

struct Shared {
  Barrier barrier;
  // Process 0's figures per iteration (us): round trip, the two waits, queries per wait.
  double trip[kMaxIters], waitOut[kMaxIters], waitBack[kMaxIters], queries[kMaxIters];
};

void meet(Barrier& b, int n) {
  int gen = b.generation.load(std::memory_order_acquire);
  if (b.count.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    b.count.store(0, std::memory_order_relaxed);
    b.generation.fetch_add(1, std::memory_order_release);
    return;
  }
  while (b.generation.load(std::memory_order_acquire) == gen) sched_yield();
}

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Waits for the stream the `mode` way; returns the queries made (spin mode).
int wait(const std::string& mode, GpuDevice& gpu) {
  const CudaDriver& cu = gpu.driver();
  if (mode == "hvd") {
    (void)gpu.synchronize(std::chrono::seconds(30));
    return 0;
  }
  if (mode == "block") {
    cu.cuStreamSynchronize(gpu.stream());
    return 0;
  }
  int n = 1;
  while (cu.cuStreamQuery(gpu.stream()) == CUDA_ERROR_NOT_READY) ++n;
  return n;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// How a process waits, and whether a copy back smaller than `bounce` bytes goes through a
// device buffer with a copy of `bounce` bytes (0: never).
struct Variant {
  std::string label, wait;
  size_t bounce = 0;
  std::string back = "copy";  // copy (as hvd), htod, 2d, batch, batch0, writes, memset
};

int child(int rank, int n, int iters, const std::vector<Variant>& variants, Shared& shared) {
  auto driver = CudaDriver::load();
  if (!driver) {
    std::fprintf(stderr, "gpu_copy_floor: %s\n", driver.status().message().c_str());
    return 77;
  }
  const CudaDriver& cu = **driver;
  if (auto s = cu.usePrimaryContext(0); !s.isOk()) return 1;
  auto opened = GpuDevice::open(cu, 0);
  if (!opened) return 1;
  GpuDevice& gpu = **opened;
  CUdeviceptr device = 0;
  cu.cuMemAlloc(&device, 1u << 20);
  auto pinned = gpu.pinned(1u << 20, 0);
  if (!pinned) return 1;
  void* tensor = reinterpret_cast<void*>(device);
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  using Batch =
      CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*, size_t*, size_t, CUstream);
  using Copy2d = CUresult (*)(const CUDA_MEMCPY2D*, CUstream);
  auto batch = reinterpret_cast<Batch>(::dlsym(lib, "cuMemcpyBatchAsync_v2"));
  auto copy2d = reinterpret_cast<Copy2d>(::dlsym(lib, "cuMemcpy2DAsync_v2"));
  using MemOps = CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
  auto memops = reinterpret_cast<MemOps>(::dlsym(lib, "cuStreamBatchMemOp_v2"));
  CUdeviceptr bounce = 0;
  cu.cuMemAlloc(&bounce, 1u << 20);
  for (const Variant& v : variants) {
    const bool missing = ((v.back == "batch" || v.back == "batch0") && batch == nullptr) ||
                         (v.back == "2d" && copy2d == nullptr) || (v.back == "writes" && memops == nullptr);
    if (missing) {  // every process sees the same driver: all pass it over
      if (rank == 0) std::printf("# %s: not in this driver\n", v.label.c_str());
      continue;
    }
    const std::string mode = v.wait;
    for (size_t bytes : {8u, 512u, 4096u, 8192u, 16384u, 32768u, 65536u, 262144u, 1048576u}) {
      if (v.back == "writes" && bytes > 4096) continue;  // about 1.4 us a write: 92 ms at 1 MiB
      for (int i = -10; i < iters; ++i) {  // ten unrecorded first
        meet(shared.barrier, n);
        auto t0 = Clock::now();
        (void)gpu.copyAsync(*pinned, tensor, bytes);
        int q = wait(mode, gpu);
        auto t1 = Clock::now();
        meet(shared.barrier, n);
        auto t2 = Clock::now();
        if (v.back == "batch" || v.back == "batch0") {
          // One copy through the batch API; "batch" hints the copy engines (not the SMs).
          CUdeviceptr dst = device, src = reinterpret_cast<CUdeviceptr>(*pinned);
          size_t size = bytes, index = 0;
          CUmemcpyAttributes attrs{};
          attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
          attrs.flags = v.back == "batch" ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE : 0;
          CUresult rc = batch(&dst, &src, &size, 1, &attrs, &index, 1, gpu.stream());
          if (rc != CUDA_SUCCESS && i == -10 && rank == 0) std::printf("# batch copy: error %d\n", rc);
        } else if (v.back == "2d") {
          CUDA_MEMCPY2D c{};
          c.srcMemoryType = CU_MEMORYTYPE_HOST;
          c.srcHost = *pinned;
          c.srcPitch = bytes;
          c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
          c.dstDevice = device;
          c.dstPitch = bytes;
          c.WidthInBytes = bytes;
          c.Height = 1;
          CUresult rc = copy2d(&c, gpu.stream());
          if (rc != CUDA_SUCCESS && i == -10 && rank == 0) std::printf("# 2d copy: error %d\n", rc);
        } else if (v.back == "writes") {
          // The values written by the stream's own 64-bit write operations, 255 a batch (the most one call takes).
          std::vector<CUstreamBatchMemOpParams> ops(bytes / 8);
          const auto* values = reinterpret_cast<const cuuint64_t*>(*pinned);
          for (size_t k = 0; k < ops.size(); ++k) {
            ops[k] = {};
            ops[k].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
            ops[k].writeValue.address = device + 8 * k;
            ops[k].writeValue.value64 = values[k];
          }
          for (size_t k = 0; k < ops.size(); k += 255) {
            CUresult rc =
                memops(gpu.stream(), static_cast<unsigned>(std::min<size_t>(255, ops.size() - k)), ops.data() + k, 0);
            if (rc != CUDA_SUCCESS && i == -10 && rank == 0 && k == 0) std::printf("# writes: error %d\n", rc);
          }
        } else if (v.back == "memset") {
          cu.cuMemsetD8Async(device, 1, bytes, gpu.stream());
        } else if (v.back == "htod") {
          cu.cuMemcpyHtoDAsync(device, *pinned, bytes, gpu.stream());
        } else if (v.bounce > bytes) {
          // A copy the size of the bounce buffer into it, then the tensor's bytes on the device.
          cu.cuMemcpyHtoDAsync(bounce, *pinned, v.bounce, gpu.stream());
          cu.cuMemcpyDtoDAsync(device, bounce, bytes, gpu.stream());
        } else {
          (void)gpu.copyAsync(tensor, *pinned, bytes);
        }
        q += wait(mode, gpu);
        auto t3 = Clock::now();
        meet(shared.barrier, n);
        if (rank == 0 && i >= 0) {
          shared.trip[i] = us(t0, Clock::now());
          shared.waitOut[i] = us(t0, t1);
          shared.waitBack[i] = us(t2, t3);
          shared.queries[i] = q / 2.0;
        }
      }
      if (rank == 0) {
        std::vector<double> trip(shared.trip, shared.trip + iters), out(shared.waitOut, shared.waitOut + iters),
            back(shared.waitBack, shared.waitBack + iters), queries(shared.queries, shared.queries + iters);
        std::printf("%3d %-12s %8zu %10.1f %10.1f %10.1f %10.1f %9.0f\n", n, v.label.c_str(), bytes,
                    percentile(trip, 0.5), percentile(trip, 0.9), percentile(out, 0.5), percentile(back, 0.5),
                    percentile(queries, 0.5));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts{1, 2, 4};
  int iters = 300;
  std::vector<Variant> variants{{"hvd", "hvd", 0}};
  for (int a = 1; a + 1 < argc; a += 2) {
    std::string flag = argv[a];
    if (flag == "--ways") {
      variants.clear();
      for (const char* p = argv[a + 1]; *p != '\0';) {
        std::string name;
        while (*p != '\0' && *p != ',') name += *p++;
        if (*p == ',') ++p;
        if (name == "hvd" || name == "spin" || name == "block") {
          variants.push_back({name, name, 0});
        } else if (name.rfind("bounce", 0) == 0) {
          variants.push_back({name, "hvd", std::strtoul(name.c_str() + 6, nullptr, 10)});
        } else if (name == "htod" || name == "2d" || name == "batch" || name == "batch0" || name == "writes" ||
                   name == "memset") {
          variants.push_back({name, "hvd", 0, name});
        } else {
          std::fprintf(stderr, "gpu_copy_floor: unknown way '%s'\n", name.c_str());
          return 2;
        }
      }
    } else if (flag == "--iters") {
      iters = std::min(kMaxIters, std::atoi(argv[a + 1]));
    } else if (flag == "--np") {
      counts.clear();
      for (const char* p = argv[a + 1]; *p != '\0';) {
        counts.push_back(std::atoi(p));
        while (*p != '\0' && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    }
  }
  std::printf("# %3s %-12s %8s %10s %10s %10s %10s %9s\n", "np", "way", "size", "trip(us)", "p90", "d2h-wait",
              "h2d-wait", "queries");
  for (int n : counts) {
    // The driver is loaded in each child only: CUDA does not survive a fork.
    void* region = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return 1;
    auto* shared = new (region) Shared;
    std::vector<pid_t> pids;
    for (int r = 0; r < n; ++r) {
      pid_t pid = ::fork();
      if (pid == 0) _exit(child(r, n, iters, variants, *shared));
      pids.push_back(pid);
    }
    int worst = 0;
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) worst = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    ::munmap(region, sizeof(Shared));
    if (worst != 0) return worst;
  }
  return 0;
}
