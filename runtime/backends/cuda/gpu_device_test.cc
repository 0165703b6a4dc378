// runtime/backends/cuda/gpu_device_test.cc: the memory GpuDevice hands over for results (an
// allgather's or alltoall's, whose size only the collective learns), on a real GPU: every
// case SKIPs where no GPU is visible. The engine's use of it runs without a GPU in
// staged_backend_test.cc; tests/gpu/gpu_rank.cc and python/tests/ranks/torch_cuda.py run it
// through hvd on a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <span>
#include <utility>
#include <vector>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"
#include "tests/support/skip.h"

using namespace hvd::backends::cuda;

// The batched-copy kernel's PTX as built (empty without nvcc).
extern const char kBatchedCopyPtx[];

namespace {

const CudaDriver& driverOrSkip() {
  auto driver = CudaDriver::load();
  if (!driver) hvd::test::skipTest(driver.status().message());
  return **driver;
}

std::vector<std::uint32_t> readBack(const CudaDriver& cu, const void* device, size_t count) {
  std::vector<std::uint32_t> host(count);
  REQUIRE(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(host.data()), reinterpret_cast<CUdeviceptr>(device), count * 4) ==
          CUDA_SUCCESS);
  return host;
}

}  // namespace

TEST_CASE("GPU memory handed over for a result is device memory that outlives the device that allocated it", "[gpu]") {
  const CudaDriver& cu = driverOrSkip();
  std::vector<std::uint32_t> pattern(1 << 18);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::uint32_t>(i * 2654435761u);
  hvd::backends::DeviceBuffer kept;
  {
    auto gpu = GpuDevice::open(cu, 0);
    REQUIRE(gpu);
    auto buffer = (*gpu)->allocate(pattern.size() * 4);
    REQUIRE(buffer);
    CHECK(buffer->bytes == pattern.size() * 4);
    CHECK(buffer->ordinal == 0);
    unsigned int type = 0;
    REQUIRE(cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     reinterpret_cast<CUdeviceptr>(buffer->memory.get())) == CUDA_SUCCESS);
    CHECK(type == CU_MEMORYTYPE_DEVICE);
    // Allocated in the stream's order: the stream must be done before another reads it.
    REQUIRE((*gpu)->synchronize(std::chrono::seconds(10)).isOk());
    REQUIRE(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(buffer->memory.get()),
                        reinterpret_cast<CUdeviceptr>(pattern.data()), pattern.size() * 4) == CUDA_SUCCESS);
    kept = std::move(*buffer);
  }  // the device, its stream and its pool are gone; the buffer is not
  REQUIRE(cu.usePrimaryContext(0).isOk());
  CHECK(readBack(cu, kept.memory.get(), pattern.size()) == pattern);
  kept.memory.reset();  // freed in its context, after the device closed
}

TEST_CASE("GPU results of 0 bytes get no memory and two results never share it", "[gpu]") {
  const CudaDriver& cu = driverOrSkip();
  auto gpu = GpuDevice::open(cu, 0);
  REQUIRE(gpu);
  auto none = (*gpu)->allocate(0);
  REQUIRE(none);
  CHECK(none->memory == nullptr);
  CHECK(none->bytes == 0);
  auto a = (*gpu)->allocate(4096);
  auto b = (*gpu)->allocate(4096);
  REQUIRE(a);
  REQUIRE(b);
  const auto* x = a->memory.get();
  const auto* y = b->memory.get();
  CHECK((x + 4096 <= y || y + 4096 <= x));
}

TEST_CASE("a result larger than the GPU fails naming its size and the GPU with a hint", "[gpu]") {
  const CudaDriver& cu = driverOrSkip();
  auto gpu = GpuDevice::open(cu, 0);
  REQUIRE(gpu);
  auto huge = (*gpu)->allocate(size_t{1} << 50);
  REQUIRE_FALSE(huge);
  CHECK(huge.status().message().find("allocating 1125899906842624 bytes on GPU 0 (") == 0);
  CHECK(huge.status().message().find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  CHECK(huge.status().hint().find("torch.cuda.empty_cache()") != std::string::npos);
  // The device still works afterwards.
  CHECK((*gpu)->allocate(1 << 20));
}

namespace {

// copyMany of `count` copies of assorted sizes (0 bytes to past the kernel's limit) at
// assorted alignments, in `calls` calls before one synchronization; what the destination
// holds afterwards against what it should.
void checkCopies(const CudaDriver& cu, GpuDevice& gpu, size_t count, size_t calls) {
  const size_t sizes[] = {0, 1, 3, 15, 16, 17, 255, 256, 4097, 65536, 65537, 300000};
  std::vector<hvd::backends::DeviceCopy> copies;
  std::vector<std::pair<size_t, size_t>> places;  // (source offset, destination offset)
  size_t from = 0, to = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t bytes = sizes[i % std::size(sizes)];
    places.emplace_back(from + i % 5, to + i % 7);
    copies.push_back({nullptr, nullptr, bytes});
    from += bytes + 32, to += bytes + 32;
  }
  auto source = gpu.allocate(from), target = gpu.allocate(to);
  REQUIRE(source);
  REQUIRE(target);
  REQUIRE(gpu.synchronize(std::chrono::seconds(10)).isOk());
  std::vector<std::byte> pattern(from), want(to, std::byte{0xee});
  for (size_t i = 0; i < from; ++i) pattern[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  REQUIRE(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(source->memory.get()), reinterpret_cast<CUdeviceptr>(pattern.data()),
                      from) == CUDA_SUCCESS);
  REQUIRE(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(target->memory.get()), reinterpret_cast<CUdeviceptr>(want.data()),
                      to) == CUDA_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    copies[i].src = source->memory.get() + places[i].first;
    copies[i].dst = target->memory.get() + places[i].second;
    std::copy_n(pattern.begin() + static_cast<long>(places[i].first), copies[i].bytes,
                want.begin() + static_cast<long>(places[i].second));
  }
  const size_t per = (count + calls - 1) / calls;
  for (size_t at = 0; at < count; at += per) {
    REQUIRE(gpu.copyMany(std::span(copies).subspan(at, std::min(per, count - at))).isOk());
  }
  REQUIRE(gpu.synchronize(std::chrono::seconds(10)).isOk());
  std::vector<std::byte> got(to);
  REQUIRE(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(got.data()), reinterpret_cast<CUdeviceptr>(target->memory.get()),
                      to) == CUDA_SUCCESS);
  CHECK(got == want);
}

}  // namespace

TEST_CASE("GPU copies handed over together land whole at every size and alignment in one launch", "[gpu]") {
  const CudaDriver& cu = driverOrSkip();
  auto gpu = GpuDevice::open(cu, 0);
  REQUIRE(gpu);
  SECTION("300 copies in one call") { checkCopies(cu, **gpu, 300, 1); }
  SECTION("300 copies in three calls before one synchronization (a fusion's pack and unpack)") {
    checkCopies(cu, **gpu, 300, 3);
  }
  SECTION("5000 copies: more than the first copy list holds") { checkCopies(cu, **gpu, 5000, 2); }
  // Built with nvcc, the kernel must have loaded on a GPU (else copies went one call each).
  if (kBatchedCopyPtx[0] != '\0') CHECK((*gpu)->copiesInOneLaunch());
}
