// tests/gpu/gpu_rank.cc: a rank that checks hvd's GPU collectives on device memory: every
// type, every operation, sizes from 0 to 256 MiB, blocking and async (fused) allreduce,
// broadcast from every root, allgatherv of uneven shares, reducescatter in even and uneven
// parts, alltoall of uneven and empty blocks. Values are small integers, exact
// in every type (bfloat16 included) for up to 4 ranks, so results compare exactly (average
// within rounding). Prints one line per failure and "gpu_rank: rank R ok ..." at the end.
//   gpu_rank [--expect-backend nccl|cuda-staged] [--max-mib N]
// Exit: 0 all correct, 1 a wrong result or an error, 77 no GPU here (the reason printed).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <algorithm>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "runtime/backends/cuda/cuda_driver.h"

namespace {

using hvd::DataType;
using hvd::Device;
using hvd::ReduceOp;
using hvd::backends::cuda::CudaDriver;

const CudaDriver* cu = nullptr;
int failures = 0, checks = 0;

void fail(const std::string& what) {
  if (++failures <= 20) std::fprintf(stderr, "gpu_rank: rank %d: %s\n", hvd::rank(), what.c_str());
}

// Host encodings of small exact values, and decodings of any value (for averages).
std::uint16_t toHalf(float v) {
  if (v == 0) return 0;
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  std::uint32_t sign = (bits >> 16) & 0x8000;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  std::uint32_t mantissa = (bits >> 13) & 0x3ff;  // exact for the small integers used here
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << 10) | mantissa);
}
float fromHalf(std::uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  float mantissa = static_cast<float>(h & 0x3ff);
  float v = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024.0f + mantissa, exponent - 25);
  return (h & 0x8000) ? -v : v;
}
std::uint16_t toBf16(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}
float fromBf16(std::uint16_t b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

void store(DataType t, std::byte* at, double v) {
  switch (t) {
    case DataType::kFloat32: { float x = static_cast<float>(v); std::memcpy(at, &x, 4); break; }
    case DataType::kFloat64: std::memcpy(at, &v, 8); break;
    case DataType::kFloat16: { auto x = toHalf(static_cast<float>(v)); std::memcpy(at, &x, 2); break; }
    case DataType::kBFloat16: { auto x = toBf16(static_cast<float>(v)); std::memcpy(at, &x, 2); break; }
    case DataType::kInt8: { auto x = static_cast<std::int8_t>(v); std::memcpy(at, &x, 1); break; }
    case DataType::kUInt8: { auto x = static_cast<std::uint8_t>(v); std::memcpy(at, &x, 1); break; }
    case DataType::kInt32: { auto x = static_cast<std::int32_t>(v); std::memcpy(at, &x, 4); break; }
    case DataType::kInt64: { auto x = static_cast<std::int64_t>(v); std::memcpy(at, &x, 8); break; }
    case DataType::kInt16: { auto x = static_cast<std::int16_t>(v); std::memcpy(at, &x, 2); break; }
    case DataType::kUInt16: { auto x = static_cast<std::uint16_t>(v); std::memcpy(at, &x, 2); break; }
    case DataType::kBool: { auto x = static_cast<std::uint8_t>(v != 0); std::memcpy(at, &x, 1); break; }
  }
}
double load(DataType t, const std::byte* at) {
  switch (t) {
    case DataType::kFloat32: { float x; std::memcpy(&x, at, 4); return x; }
    case DataType::kFloat64: { double x; std::memcpy(&x, at, 8); return x; }
    case DataType::kFloat16: { std::uint16_t x; std::memcpy(&x, at, 2); return fromHalf(x); }
    case DataType::kBFloat16: { std::uint16_t x; std::memcpy(&x, at, 2); return fromBf16(x); }
    case DataType::kInt8: { std::int8_t x; std::memcpy(&x, at, 1); return x; }
    case DataType::kUInt8: { std::uint8_t x; std::memcpy(&x, at, 1); return x; }
    case DataType::kInt32: { std::int32_t x; std::memcpy(&x, at, 4); return x; }
    case DataType::kInt64: { std::int64_t x; std::memcpy(&x, at, 8); return static_cast<double>(x); }
    case DataType::kInt16: { std::int16_t x; std::memcpy(&x, at, 2); return x; }
    case DataType::kUInt16: { std::uint16_t x; std::memcpy(&x, at, 2); return x; }
    case DataType::kBool: { std::uint8_t x; std::memcpy(&x, at, 1); return x; }
  }
  return 0;
}

// Rank r's element i: 1..3, so a product over 4 ranks (81) is exact even in bfloat16. As a
// bool, true where it is 3: "any" and "all" then both vary.
double value(int r, size_t i, DataType t) {
  double v = static_cast<double>((static_cast<size_t>(r) + i) % 3 + 1);
  return t == DataType::kBool ? (v == 3 ? 1 : 0) : v;
}

double expected(DataType t, ReduceOp op, size_t i, int n) {
  double acc = value(0, i, t);
  for (int r = 1; r < n; ++r) {
    double v = value(r, i, t);
    if (t == DataType::kBool) {
      acc = op == ReduceOp::kMin || op == ReduceOp::kProduct ? std::min(acc, v) : std::max(acc, v);
      continue;
    }
    switch (op) {
      case ReduceOp::kSum: case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAdasum: break;  // not element-wise: tested on its own
    }
  }
  return op == ReduceOp::kAverage ? acc / n : acc;
}

bool isFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  explicit DeviceBuffer(size_t bytes) {
    if (cu->cuMemAlloc(&ptr, std::max<size_t>(bytes, 1)) != CUDA_SUCCESS) ptr = 0;
  }
  ~DeviceBuffer() { if (ptr != 0) cu->cuMemFree(ptr); }
  void* get() const { return reinterpret_cast<void*>(ptr); }
};

void upload(void* device, const std::vector<std::byte>& host) {
  if (!host.empty() && cu->cuMemcpy(reinterpret_cast<CUdeviceptr>(device), reinterpret_cast<CUdeviceptr>(host.data()),
                                     host.size()) != CUDA_SUCCESS) {
    fail("cuMemcpy to the device failed");
  }
  // From pageable memory cuMemcpy may return before its DMA lands, and hvd's stream does
  // not wait for it (as a framework synchronizes its stream before handing a tensor over).
  cu->cuStreamSynchronize(nullptr);
}
std::vector<std::byte> download(const void* device, size_t bytes) {
  std::vector<std::byte> host(bytes);
  if (bytes > 0 && cu->cuMemcpy(reinterpret_cast<CUdeviceptr>(host.data()), reinterpret_cast<CUdeviceptr>(device), bytes) !=
                       CUDA_SUCCESS) {
    fail("cuMemcpy from the device failed");
  }
  return host;
}

// A GPU tensor's allgather or alltoall result, which must have stayed on this rank's GPU
// (memory hvd allocated there), copied to the host to be checked; empty after a failure.
std::vector<std::byte> resultBytes(const hvd::Gathered& g, const std::string& what) {
  if (g.device != Device::kCuda || !g.data.empty()) {
    fail(what + ": the result came back in host memory, not on the GPU");
    return {};
  }
  if (g.onDevice == nullptr) return {};
  unsigned int memoryType = 0;
  if (cu->cuPointerGetAttribute(&memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                reinterpret_cast<CUdeviceptr>(g.onDevice.get())) != CUDA_SUCCESS ||
      memoryType != CU_MEMORYTYPE_DEVICE) {
    fail(what + ": the result is not device memory");
    return {};
  }
  return download(g.onDevice.get(), g.onDeviceBytes);
}

// One result kept past hvd::shutdown(), freed after it (from main): the memory holds its
// context, so reading and freeing it then must work.
std::shared_ptr<std::byte> keptPastShutdown;
std::vector<std::byte> keptWant;

std::vector<std::byte> pattern(DataType t, size_t count, int r) {
  size_t w = hvd::dataTypeSize(t);
  std::vector<std::byte> host(count * w);
  for (size_t i = 0; i < count; ++i) store(t, host.data() + i * w, value(r, i, t));
  return host;
}

void compareReduced(const std::string& what, DataType t, ReduceOp op, const std::vector<std::byte>& got, size_t count) {
  ++checks;
  size_t w = hvd::dataTypeSize(t);
  int n = hvd::size();
  for (size_t i = 0; i < count; ++i) {
    double want = expected(t, op, i, n);
    if (op == ReduceOp::kAverage && !isFloat(t)) want = std::trunc(want);
    double have = load(t, got.data() + i * w);
    double tolerance = op == ReduceOp::kAverage ? (isFloat(t) ? 0.02 * want : 1.0) : 0.0;
    if (std::fabs(have - want) > tolerance) {
      fail(what + ": element " + std::to_string(i) + " is " + std::to_string(have) + ", expected " + std::to_string(want));
      return;
    }
  }
}

void check(hvd::Status s, const std::string& what) {
  if (!s.isOk()) fail(what + ": " + s.message());
}

// NCCL has no 16-bit integers: under it their allreduces are refused, by name, on every
// rank alike (hvd/types.h); the staged path reduces them on the CPU. bool's average is
// refused everywhere.
void allreduces(size_t maxBytes, const std::string& backend) {
  const size_t counts[] = {0, 1, 3, 1000, 65537, 1u << 20};
  for (int ti = 0; ti < hvd::kDataTypeCount; ++ti) {
    auto t = static_cast<DataType>(ti);
    for (int oi = 0; oi < hvd::kElementwiseReduceOpCount; ++oi) {
      auto op = static_cast<ReduceOp>(oi);
      for (size_t count : counts) {
        std::string what = "allreduce " + std::string(hvd::reduceOpName(op)) + " of " + std::to_string(count) + " " +
                           std::string(hvd::dataTypeName(t));
        DeviceBuffer in(count * hvd::dataTypeSize(t)), out(count * hvd::dataTypeSize(t));
        bool sixteenBitInts = t == DataType::kInt16 || t == DataType::kUInt16;
        if ((sixteenBitInts && backend == "nccl" && count > 0) || (t == DataType::kBool && op == ReduceOp::kAverage)) {
          ++checks;
          if (hvd::allreduce(in.get(), out.get(), count, t, op, Device::kCuda).isOk()) fail(what + ": was not refused");
          continue;
        }
        upload(in.get(), pattern(t, count, hvd::rank()));
        check(hvd::allreduce(in.get(), out.get(), count, t, op, Device::kCuda), what);  // out of place
        compareReduced(what + " (out of place)", t, op, download(out.get(), count * hvd::dataTypeSize(t)), count);
        check(hvd::allreduce(in.get(), in.get(), count, t, op, Device::kCuda), what);  // in place
        compareReduced(what + " (in place)", t, op, download(in.get(), count * hvd::dataTypeSize(t)), count);
      }
    }
  }
  // Adasum (NCCL's through host memory, the staged path's on its host backend): every rank's
  // tensor the same, so the combination is that tensor (a sum would be size() times it).
  for (size_t count : {size_t(1), size_t(1000), size_t(65537)}) {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 13) - 6.0f;
    const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(host.data()),
                                       reinterpret_cast<const std::byte*>(host.data() + count));
    DeviceBuffer buf(bytes.size());
    upload(buf.get(), bytes);
    std::string what = "Adasum of " + std::to_string(count) + " float32 equal on every rank";
    check(hvd::allreduce(buf.get(), buf.get(), count, DataType::kFloat32, ReduceOp::kAdasum, Device::kCuda), what);
    ++checks;
    if (download(buf.get(), bytes.size()) != bytes) fail(what + ": not the tensor itself");
  }
  // Large: float32 sums up to maxBytes (256 MiB by default).
  for (size_t bytes = 4u << 20; bytes <= maxBytes; bytes *= 4) {
    size_t count = bytes / 4;
    DeviceBuffer buf(bytes);
    upload(buf.get(), pattern(DataType::kFloat32, count, hvd::rank()));
    std::string what = "allreduce sum of " + std::to_string(bytes >> 20) + " MiB of float32";
    check(hvd::allreduce(buf.get(), buf.get(), count, DataType::kFloat32, ReduceOp::kSum, Device::kCuda), what);
    compareReduced(what, DataType::kFloat32, ReduceOp::kSum, download(buf.get(), bytes), count);
  }
}

void fusedAsync() {
  // 64 small named tensors at once: the engine fuses them into its device buffer.
  const int tensors = 64;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<hvd::Handle> handles;
  for (int k = 0; k < tensors; ++k) {
    size_t count = 100 + static_cast<size_t>(k);
    bufs.push_back(std::make_unique<DeviceBuffer>(count * 4));
    upload(bufs.back()->get(), pattern(DataType::kFloat32, count, hvd::rank()));
    auto h = hvd::allreduceAsync("grad." + std::to_string(k), bufs.back()->get(), bufs.back()->get(), count,
                                 DataType::kFloat32, ReduceOp::kAverage, Device::kCuda);
    if (!h) return fail("allreduceAsync: " + h.status().message());
    handles.push_back(*h);
  }
  for (int k = 0; k < tensors; ++k) {
    size_t count = 100 + static_cast<size_t>(k);
    check(hvd::synchronize(handles[static_cast<size_t>(k)]), "fused tensor " + std::to_string(k));
    compareReduced("fused async average, tensor " + std::to_string(k), DataType::kFloat32, ReduceOp::kAverage,
                   download(bufs[static_cast<size_t>(k)]->get(), count * 4), count);
  }
}

void broadcasts() {
  for (int root = 0; root < hvd::size(); ++root) {
    for (size_t count : {size_t{0}, size_t{5}, size_t{1} << 20}) {
      DeviceBuffer buf(count * 8);
      upload(buf.get(), pattern(DataType::kInt64, count, hvd::rank()));
      std::string what = "broadcast of " + std::to_string(count) + " int64 from rank " + std::to_string(root);
      check(hvd::broadcast(buf.get(), count, DataType::kInt64, root, Device::kCuda), what);
      ++checks;
      if (download(buf.get(), count * 8) != pattern(DataType::kInt64, count, root)) fail(what + ": wrong data");
    }
  }
}

void allgathers() {
  int n = hvd::size();
  std::vector<size_t> counts;
  size_t total = 0;
  for (int r = 0; r < n; ++r) total += counts.emplace_back(static_cast<size_t>(r) * 1000 + 3);
  DeviceBuffer mine(counts[static_cast<size_t>(hvd::rank())] * 2), out(total * 2);
  upload(mine.get(), pattern(DataType::kBFloat16, counts[static_cast<size_t>(hvd::rank())], hvd::rank()));
  check(hvd::allgatherv(mine.get(), counts.data(), out.get(), DataType::kBFloat16, Device::kCuda), "allgatherv");
  std::vector<std::byte> want;
  for (int r = 0; r < n; ++r) {
    auto part = pattern(DataType::kBFloat16, counts[static_cast<size_t>(r)], r);
    want.insert(want.end(), part.begin(), part.end());
  }
  ++checks;
  if (download(out.get(), total * 2) != want) fail("allgatherv of uneven bfloat16 shares: wrong data");
  // Async, without an output buffer: the result stays on the GPU, in memory hvd allocated.
  auto h = hvd::allgatherAsync("gathered", mine.get(), counts[static_cast<size_t>(hvd::rank())], DataType::kBFloat16,
                               Device::kCuda);
  if (!h) return fail("allgatherAsync: " + h.status().message());
  auto gathered = hvd::synchronizeAllgather(*h);
  ++checks;
  if (!gathered) return fail("allgatherAsync: " + gathered.status().message());
  if (resultBytes(*gathered, "async allgather") != want || gathered->counts != counts) {
    fail("async allgather on the GPU: wrong data or counts");
  }
  keptPastShutdown = gathered->onDevice;
  keptWant = want;
}

// Every op on types NCCL reduces natively, in even parts (ncclReduceScatter) and uneven
// ones (a reduce per rank), async: the result is this rank's rows of the allreduce's.
void reducescatters(const std::string& backend) {
  const int n = hvd::size();
  const size_t counts[] = {0, 1, 7, static_cast<size_t>(n) * 4096, (1u << 20) + 3};
  for (DataType t : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32, DataType::kInt64, DataType::kUInt16}) {
    for (int oi = 0; oi < hvd::kElementwiseReduceOpCount; ++oi) {
      auto op = static_cast<ReduceOp>(oi);
      for (size_t count : counts) {
        const size_t w = hvd::dataTypeSize(t), rows = hvd::reducescatterRows(count);
        const size_t first = hvd::reducescatterFirstRow(count);
        std::string what = "reducescatter " + std::string(hvd::reduceOpName(op)) + " of " + std::to_string(count) +
                           " " + std::string(hvd::dataTypeName(t));
        DeviceBuffer in(count * w), out(rows * w);
        upload(in.get(), pattern(t, count, hvd::rank()));
        auto h = hvd::reducescatterAsync("rs", in.get(), out.get(), count, t, op, {}, Device::kCuda);
        if (t == DataType::kUInt16 && backend == "nccl" && count > 0) {
          ++checks;
          if (h) fail(what + ": was not refused");
          continue;
        }
        if (!h) {
          fail(what + ": " + h.status().message());
          continue;
        }
        check(hvd::synchronize(*h), what);
        auto got = download(out.get(), rows * w);
        ++checks;
        for (size_t i = 0; i < rows; ++i) {
          double want = expected(t, op, first + i, n);
          if (op == ReduceOp::kAverage && !isFloat(t)) want = std::trunc(want);
          double tolerance = op == ReduceOp::kAverage ? (isFloat(t) ? 0.02 * want : 1.0) : 0.0;
          if (const double have = load(t, got.data() + i * w); std::fabs(have - want) > tolerance) {
            fail(what + ": row " + std::to_string(first + i) + " is " + std::to_string(have) + ", expected " +
                 std::to_string(want));
            break;
          }
        }
      }
    }
  }
}

// Rank k sends rank d (k + d) % 3 * 1000 rows of 3 float32 (some blocks empty), and an
// even split; each rank gets its rows in rank order, in host memory.
void alltoalls() {
  const int n = hvd::size(), me = hvd::rank();
  const std::int64_t rowShape[] = {3};
  std::vector<std::uint64_t> splits;
  std::vector<std::byte> send, want;
  std::vector<size_t> wantCounts;
  for (int d = 0; d < n; ++d) splits.push_back(static_cast<std::uint64_t>((me + d) % 3) * 1000);
  for (int d = 0; d < n; ++d) {
    std::vector<std::byte> block(splits[static_cast<size_t>(d)] * 3 * 4);
    for (size_t i = 0; i < block.size() / 4; ++i) store(DataType::kFloat32, block.data() + i * 4, 100.0 * me + d);
    send.insert(send.end(), block.begin(), block.end());
  }
  for (int k = 0; k < n; ++k) {
    const size_t rows = static_cast<size_t>((k + me) % 3) * 1000;
    wantCounts.push_back(rows * 3);
    std::vector<std::byte> block(rows * 3 * 4);
    for (size_t i = 0; i < rows * 3; ++i) store(DataType::kFloat32, block.data() + i * 4, 100.0 * k + me);
    want.insert(want.end(), block.begin(), block.end());
  }
  DeviceBuffer in(send.size());
  upload(in.get(), send);
  auto h = hvd::alltoallAsync("a2a", in.get(), send.size() / 4, DataType::kFloat32, splits, rowShape, Device::kCuda);
  if (!h) return fail("alltoallAsync: " + h.status().message());
  auto got = hvd::synchronizeAllgather(*h);
  ++checks;
  if (!got) return fail("alltoall on the GPU: " + got.status().message());
  if (resultBytes(*got, "alltoall") != want || got->counts != wantCounts) {
    fail("alltoall of uneven blocks on the GPU: wrong data or counts");
  }
  // Even: 5 rows of int64 to each rank, splits left to hvd.
  std::vector<std::byte> even(static_cast<size_t>(n) * 5 * 8);
  for (size_t i = 0; i < even.size() / 8; ++i) store(DataType::kInt64, even.data() + i * 8, 1000.0 * me + i);
  DeviceBuffer evenIn(even.size());
  upload(evenIn.get(), even);
  auto e = hvd::alltoallAsync("a2a-even", evenIn.get(), even.size() / 8, DataType::kInt64, {}, {}, Device::kCuda);
  if (!e) return fail("alltoallAsync (even): " + e.status().message());
  auto evenGot = hvd::synchronizeAllgather(*e);
  ++checks;
  if (!evenGot) return fail("even alltoall on the GPU: " + evenGot.status().message());
  std::vector<std::byte> evenWant(even.size());
  for (int k = 0; k < n; ++k) {
    for (size_t i = 0; i < 5; ++i) {
      store(DataType::kInt64, evenWant.data() + (static_cast<size_t>(k) * 5 + i) * 8,
            1000.0 * k + static_cast<double>(static_cast<size_t>(me) * 5 + i));
    }
  }
  if (resultBytes(*evenGot, "even alltoall") != evenWant) fail("even alltoall on the GPU: wrong data");
}

}  // namespace

int main(int argc, char** argv) {
  std::string expectBackend;
  size_t maxMiB = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--expect-backend") expectBackend = argv[i + 1];
    if (flag == "--max-mib") maxMiB = std::stoul(argv[i + 1]);
  }
  auto driver = CudaDriver::load();
  if (!driver) {
    std::printf("SKIPPED: %s\n", driver.status().message().c_str());
    return 77;
  }
  cu = *driver;
  if (hvd::Status s = hvd::init(); !s.isOk()) {
    // With the hint, as a program showing hvd's errors would: it names --oversubscribe-gpus.
    std::fprintf(stderr, "gpu_rank: init: %s\n%s%s", s.message().c_str(), s.hint().empty() ? "" : "  hint: ",
                 s.hint().empty() ? "" : (s.hint() + "\n").c_str());
    return 1;
  }
  // The test's own allocations need a current context; the primary one, as frameworks use,
  // of the rank's own GPU (hvdrun's HVD_LOCAL_GPU: its local rank where it sees the host's).
  const char* own = std::getenv("HVD_LOCAL_GPU");
  if (hvd::Status s = cu->usePrimaryContext(own != nullptr ? std::atoi(own) : 0); !s.isOk()) fail(s.message());
  std::string backend = hvd::gpuOperationsBackend();
  if (!expectBackend.empty() && backend != expectBackend) fail("GPU tensors go to " + backend + ", expected " + expectBackend);
  allreduces(maxMiB << 20, backend);
  fusedAsync();
  broadcasts();
  allgathers();
  reducescatters(backend);
  alltoalls();
  const int rank = hvd::rank();  // after shutdown every rank is rank 0 of 1 (seen on an H100)
  hvd::shutdown();
  ++checks;
  if (keptPastShutdown != nullptr && download(keptPastShutdown.get(), keptWant.size()) != keptWant) {
    fail("an allgather's result read after shutdown: wrong data");
  }
  keptPastShutdown.reset();  // freed after hvd let go of the GPU
  if (failures > 0) {
    std::fprintf(stderr, "gpu_rank: rank %d: %d failures in %d checks\n", rank, failures, checks);
    return 1;
  }
  std::printf("gpu_rank: rank %d ok (backend %s, %d checks)\n", rank, backend.c_str(), checks);
  return 0;
}
