// runtime/backends/cuda/staged_backend_test.cc: the staged path's logic and the engine's
// device paths (the fusion buffer from the backend, device copies, allgather into the
// caller's buffer or into host memory) on a machine without a GPU: "device" memory is host
// memory here, the ranks are threads, each a whole Runtime over the real TCP/shared-memory
// backend. tests/e2e/gpu_e2e_test.cc runs the same path on a real GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "runtime/backends/backend_factory.h"
#include "runtime/backends/cuda/staged_backend.h"
#include "runtime/core/runtime.h"
#include "tests/support/memory_store.h"
#include "tests/support/reduce_cases.h"
#include "tests/support/serial_adasum.h"

using namespace std::chrono_literals;
using hvd::DataType;
using hvd::Device;
using hvd::ReduceOp;
using hvd::engine::Engine;
using hvd::engine::OpKind;
using hvd::engine::Spec;
using hvd::test::expected;
using hvd::test::input;

namespace {

// Host memory as the device; counts what the backend asked of it, and fails copies on demand.
struct HostStaging final : hvd::backends::cuda::StagingDevice {
  std::vector<std::byte> pinnedSlots[2], scratchBuffer;
  int* copies = nullptr;
  int* scratches = nullptr;
  bool* failCopies = nullptr;
  void** stream = nullptr;
  int* batches = nullptr;  // copyMany calls, and the copies they held
  int* batchedCopies = nullptr;
  void** waitedFor = nullptr;  // the last stream waitForStream was given
  hvd::Result<bool> waitForStream(void* s) override {
    if (waitedFor != nullptr) *waitedFor = s;
    return true;
  }
  void useStream(void* s) override {
    if (stream != nullptr) *stream = s;
  }
  hvd::Status select(const void*) override { return hvd::Status::ok(); }
  hvd::Result<std::byte*> pinned(size_t bytes, int slot) override {
    auto& b = pinnedSlots[slot];
    if (b.size() < bytes + 1) b.resize(bytes + 1);
    return b.data();
  }
  hvd::Result<std::byte*> scratch(size_t bytes) override {
    if (scratches != nullptr) ++*scratches;
    if (scratchBuffer.size() < bytes + 1) scratchBuffer.resize(bytes + 1);
    return scratchBuffer.data();
  }
  hvd::Status copy(void* dst, const void* src, size_t bytes) override {
    if (failCopies != nullptr && *failCopies) return hvd::Status(hvd::Errc::kSystem, "copy failed: device lost");
    if (copies != nullptr) ++*copies;
    if (bytes > 0) std::memmove(dst, src, bytes);
    return hvd::Status::ok();
  }
  hvd::Status copyMany(std::span<const hvd::backends::DeviceCopy> many) override {
    if (batches != nullptr) ++*batches, *batchedCopies += static_cast<int>(many.size());
    return StagingDevice::copyMany(many);
  }
  hvd::Status finish() override { return hvd::Status::ok(); }
  // Each buffer its own, freed by its last owner, as the GPU's are.
  hvd::Result<hvd::backends::DeviceBuffer> allocate(size_t bytes) override {
    if (bytes == 0) return hvd::backends::DeviceBuffer{nullptr, 0, 0};
    return hvd::backends::DeviceBuffer{std::shared_ptr<std::byte>(new std::byte[bytes], std::default_delete<std::byte[]>()),
                                       bytes, 0};
  }
};

// The host backend with its reduce-scatter and alltoall hidden (as a backend without them),
// everything else passed on.
class WithoutPrimitives final : public hvd::backends::CollectiveBackend {
 public:
  explicit WithoutPrimitives(CollectiveBackend& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  bool supports(Device d) const override { return inner_.supports(d); }
  hvd::Status allreduce(const hvd::backends::TensorRef& t, ReduceOp op) override { return inner_.allreduce(t, op); }
  hvd::Status broadcast(const hvd::backends::TensorRef& t, int root) override { return inner_.broadcast(t, root); }
  hvd::Status allgatherv(const hvd::backends::TensorRef& t, std::span<const size_t> b, void* out) override {
    return inner_.allgatherv(t, b, out);
  }
  hvd::Status barrier() override { return inner_.barrier(); }

 private:
  CollectiveBackend& inner_;
};

// What a test asks of the staging on rank 0 (the counters and switches), and of the host
// backend under it on every rank.
struct StagedOptions {
  int* copies = nullptr;
  int* scratches = nullptr;
  bool* failCopies = nullptr;
  void** stream = nullptr;
  bool hidePrimitives = false;
  int* batches = nullptr;
  int* batchedCopies = nullptr;
  void** waitedFor = nullptr;
};

// body(rank, engine) on `size` thread-ranks whose GPU backend is the staged one over host
// memory; returns each rank's failure ("" for success).
std::vector<std::string> onStagedRanks(int size, const std::function<std::string(int, Engine&)>& body,
                                       std::uint64_t fusionBytes, const StagedOptions& o);
std::vector<std::string> onStagedRanks(int size, const std::function<std::string(int, Engine&)>& body,
                                       std::uint64_t fusionBytes = 64 << 20, int* copies = nullptr,
                                       bool* failCopies = nullptr, void** stream = nullptr) {
  return onStagedRanks(size, body, fusionBytes, StagedOptions{copies, nullptr, failCopies, stream, false});
}

std::vector<std::string> onStagedRanks(int size, const std::function<std::string(int, Engine&)>& body,
                                       std::uint64_t fusionBytes, const StagedOptions& o) {
  hvd::test::MemoryStore store;
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto env = hvd::EnvSnapshot::read([](const char*) -> const char* { return nullptr; });
      hvd::backends::BackendSetup setup;
      setup.rank = r, setup.size = size, setup.localSize = size;
      setup.store = &store;
      setup.secret = "staged-test";
      setup.timeout = 10s;
      setup.env = &*env;
      auto backends = hvd::backends::openBackends(setup);
      if (!backends) {
        errors[static_cast<size_t>(r)] = "open: " + backends.status().message();
        return;
      }
      auto staging = std::make_unique<HostStaging>();
      if (r == 0) {
        staging->copies = o.copies, staging->scratches = o.scratches;
        staging->failCopies = o.failCopies, staging->stream = o.stream;
        staging->batches = o.batches, staging->batchedCopies = o.batchedCopies;
        staging->waitedFor = o.waitedFor;
      }
      // Declared before the runtime, so it outlives the staged backend that runs on it.
      std::unique_ptr<hvd::backends::CollectiveBackend> hidden;
      if (o.hidePrimitives) hidden = std::make_unique<WithoutPrimitives>(*backends->front());
      auto& host = hidden ? *hidden : *backends->front();
      backends->back() = hvd::backends::cuda::makeStagedBackend(std::move(staging), host, r);
      hvd::engine::EngineOptions options;
      options.fusionThresholdBytes = fusionBytes;
      auto runtime = hvd::Runtime::create({r, size, r, size, 0, 1}, std::move(*backends), options);
      if (!runtime) {
        errors[static_cast<size_t>(r)] = "create: " + runtime.status().message();
        return;
      }
      errors[static_cast<size_t>(r)] = body(r, (*runtime)->engine());
      (*runtime)->shutdown();
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<std::string> none(int size) { return std::vector<std::string>(static_cast<size_t>(size)); }

// check(type, op) for every type and op the serial answer covers; its first failure, or "".
template <typename Check>
std::string forEveryTypeAndOp(Check check) {
  for (int t = 0; t < hvd::kDataTypeCount; ++t) {
    for (int o = 0; o < hvd::kElementwiseReduceOpCount; ++o) {
      auto type = static_cast<DataType>(t);
      auto op = static_cast<ReduceOp>(o);
      if (!hvd::test::checkable(type, op)) continue;
      if (std::string failed = check(type, op); !failed.empty()) return failed;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("staged GPU allreduces equal the serial result for every type and op, in and out of place", "[unit]") {
  for (int size : {1, 3, 4}) {
    auto errors = onStagedRanks(size, [size](int rank, Engine& e) -> std::string {
      return forEveryTypeAndOp([&](DataType type, ReduceOp op) -> std::string {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
          auto in = input(type, rank, count);
          std::vector<std::byte> out(in.size());
          auto h = e.submit({"", Spec{OpKind::kAllreduce, type, op, 0, count, Device::kCuda}, in.data(), out.data()});
          if (!h) return h.status().message();
          if (auto s = e.wait(*h); !s.isOk()) return s.message();
          if (out != expected(type, op, size, count)) return "wrong out-of-place result";
          auto h2 = e.submit({"", Spec{OpKind::kAllreduce, type, op, 0, count, Device::kCuda}, in.data(), in.data()});
          if (!h2) return h2.status().message();
          if (auto s = e.wait(*h2); !s.isOk()) return s.message();
          if (in != expected(type, op, size, count)) return "wrong in-place result";
        }
        return "";
      });
    });
    INFO("ranks " << size);
    CHECK(errors == none(size));
  }
}

TEST_CASE("named GPU allreduces ready together are fused through the backend's device buffer and come back right", "[unit]") {
  int copies = 0, batches = 0, batchedCopies = 0;
  StagedOptions counted;
  counted.copies = &copies, counted.batches = &batches, counted.batchedCopies = &batchedCopies;
  auto errors = onStagedRanks(3, [](int rank, Engine& e) -> std::string {
    std::vector<std::vector<std::byte>> bufs;
    std::vector<hvd::engine::HandleId> handles;
    for (int k = 0; k < 40; ++k) bufs.push_back(input(DataType::kFloat32, rank + k, 10 + static_cast<size_t>(k)));
    for (int k = 0; k < 40; ++k) {
      auto& b = bufs[static_cast<size_t>(k)];
      auto h = e.submit({"g" + std::to_string(k),
                         Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, b.size() / 4, Device::kCuda},
                         b.data(), b.data()});
      if (!h) return h.status().message();
      handles.push_back(*h);
    }
    for (int k = 0; k < 40; ++k) {
      if (auto s = e.wait(handles[static_cast<size_t>(k)]); !s.isOk()) return s.message();
      std::vector<std::byte> want(bufs[static_cast<size_t>(k)].size());
      for (size_t i = 0; i < want.size() / 4; ++i) {
        double sum = 0;
        for (int r = 0; r < 3; ++r) sum += hvd::test::valueFor(DataType::kFloat32, r + k, i);
        hvd::test::put(DataType::kFloat32, want, i, sum);
      }
      if (bufs[static_cast<size_t>(k)] != want) return "tensor " + std::to_string(k) + " is wrong";
    }
    return "";
  }, 64 << 20, counted);
  CHECK(errors == none(3));
  // Fused tensors are copied into and out of the device buffer (2 each) and each fused
  // group is staged (2 more); staging every tensor alone would be exactly 80 copies.
  CHECK(copies > 80);
  // A fused group's tensors go into the buffer in one call and come out in another: fewer
  // calls than copies (a call per tensor cost each one a launch on a GPU).
  CHECK(batches > 0);
  CHECK(batchedCopies > batches);
  INFO("copies " << copies << ", in " << batches << " calls holding " << batchedCopies);
}

TEST_CASE("GPU Adasum runs fused on the host backend through the staged path, refused over a host backend without it",
          "[unit]") {
  const std::vector<size_t> counts{6, 1, 200, 33};
  auto value = [](int rank, size_t tensor, size_t i) {
    const double x = 0.3 * static_cast<double>(i) + static_cast<double>(tensor) + 1.7 * rank;
    return static_cast<float>(std::sin(x) + 0.1 * rank);
  };
  for (bool hidden : {false, true}) {
    INFO((hidden ? "host backend without Adasum" : "hvd's host backend"));
    StagedOptions options;
    options.hidePrimitives = hidden;
    auto errors = onStagedRanks(3, [&](int rank, Engine& e) -> std::string {
      std::vector<std::vector<float>> data;
      std::vector<hvd::engine::HandleId> handles;
      for (size_t t = 0; t < counts.size(); ++t) {
        data.emplace_back(counts[t]);
        for (size_t i = 0; i < counts[t]; ++i) data[t][i] = value(rank, t, i);
        auto h = e.submit({"adasum." + std::to_string(t),
                           Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kAdasum, 0, counts[t], Device::kCuda},
                           data[t].data(), data[t].data()});
        if (hidden) {
          if (h) return "accepted over a host backend without Adasum";
          if (h.status().code() != hvd::Errc::kInvalidUsage) return h.status().message();
          return h.status().message().find("has no Adasum") == std::string::npos ? h.status().message() : "";
        }
        if (!h) return h.status().message();
        handles.push_back(*h);
      }
      for (size_t t = 0; t < counts.size(); ++t) {
        if (auto s = e.wait(handles[t]); !s.isOk()) return s.message();
        std::vector<std::vector<double>> leaves(3);
        for (int r = 0; r < 3; ++r) {
          for (size_t i = 0; i < counts[t]; ++i) leaves[static_cast<size_t>(r)].push_back(value(r, t, i));
        }
        std::vector<double> want = hvd::test::adasumTree(leaves);
        for (size_t i = 0; i < counts[t]; ++i) {
          if (std::abs(data[t][i] - want[i]) > 1e-5 * (1 + std::abs(want[i]))) {
            return "tensor " + std::to_string(t) + " element " + std::to_string(i) + " is " +
                   std::to_string(data[t][i]) + ", the tree gives " + std::to_string(want[i]);
          }
        }
      }
      return "";
    }, 64 << 20, options);
    CHECK(errors == none(3));
  }
}

namespace {

// The bytes of a GPU tensor's gathered result, which must have stayed on the "device"
// (memory the backend allocated for it).
hvd::Result<std::vector<std::byte>> onDevice(const hvd::engine::Gathered& g) {
  if (g.device != Device::kCuda) return hvd::Status(hvd::Errc::kInternal, "the result did not stay on the device");
  if (!g.bytes.empty()) return hvd::Status(hvd::Errc::kInternal, "the result came back in host memory too");
  if (g.onDevice.memory == nullptr) return std::vector<std::byte>{};
  return std::vector<std::byte>(g.onDevice.memory.get(), g.onDevice.memory.get() + g.onDevice.bytes);
}

}  // namespace

TEST_CASE("GPU broadcasts from every root and allgathers into the caller's buffer or memory of their own are right",
          "[unit]") {
  auto errors = onStagedRanks(3, [](int rank, Engine& e) -> std::string {
    for (int root = 0; root < 3; ++root) {
      auto buf = input(DataType::kInt64, rank, 100);
      auto h = e.submit({"", Spec{OpKind::kBroadcast, DataType::kInt64, ReduceOp::kSum, root, 100, Device::kCuda},
                         buf.data(), buf.data()});
      if (!h) return h.status().message();
      if (auto s = e.wait(*h); !s.isOk()) return s.message();
      if (buf != input(DataType::kInt64, root, 100)) return "broadcast from " + std::to_string(root) + " is wrong";
    }
    std::vector<std::byte> want;
    for (int r = 0; r < 3; ++r) {
      auto part = input(DataType::kInt32, r, 5 + static_cast<size_t>(r) * 10);
      want.insert(want.end(), part.begin(), part.end());
    }
    auto mine = input(DataType::kInt32, rank, 5 + static_cast<size_t>(rank) * 10);
    std::vector<std::byte> out(want.size());
    auto h = e.submit({"", Spec{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, mine.size() / 4, Device::kCuda},
                       mine.data(), out.data(), out.size()});
    if (!h) return h.status().message();
    auto gathered = e.waitGathered(*h);
    if (!gathered) return gathered.status().message();
    if (out != want) return "allgather into the caller's buffer is wrong";
    if (gathered->counts != std::vector<std::uint64_t>{5, 15, 25}) return "allgather counts are wrong";
    auto h2 = e.submit({"named", Spec{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, mine.size() / 4, Device::kCuda},
                        mine.data(), nullptr});
    if (!h2) return h2.status().message();
    auto own = e.waitGathered(*h2);
    if (!own) return own.status().message();
    auto bytes = onDevice(*own);
    if (!bytes) return bytes.status().message();
    if (*bytes != want || own->onDevice.bytes != want.size()) return "allgather into memory of its own is wrong";
    return "";
  });
  CHECK(errors == none(3));
}

TEST_CASE("GPU allgathers' results are each their own and outlive the runtime that gathered them", "[unit]") {
  std::vector<std::vector<hvd::engine::Gathered>> kept(3);
  auto errors = onStagedRanks(3, [&kept](int rank, Engine& e) -> std::string {
    for (int round = 0; round < 2; ++round) {
      auto mine = input(DataType::kFloat64, rank + 10 * round, 7);
      auto h = e.submit({"", Spec{OpKind::kAllgather, DataType::kFloat64, ReduceOp::kSum, 0, 7, Device::kCuda},
                         mine.data(), nullptr});
      if (!h) return h.status().message();
      auto got = e.waitGathered(*h);
      if (!got) return got.status().message();
      kept[static_cast<size_t>(rank)].push_back(std::move(*got));
    }
    return "";
  });
  REQUIRE(errors == none(3));
  for (int rank = 0; rank < 3; ++rank) {
    for (int round = 0; round < 2; ++round) {
      INFO("rank " << rank << ", round " << round);
      std::vector<std::byte> want;
      for (int r = 0; r < 3; ++r) {
        auto part = input(DataType::kFloat64, r + 10 * round, 7);
        want.insert(want.end(), part.begin(), part.end());
      }
      auto bytes = onDevice(kept[static_cast<size_t>(rank)][static_cast<size_t>(round)]);
      REQUIRE(bytes);
      CHECK(*bytes == want);
    }
  }
}

TEST_CASE("a GPU allgather into a buffer of the wrong size fails naming both sizes and writes nothing", "[unit]") {
  auto errors = onStagedRanks(2, [](int rank, Engine& e) -> std::string {
    std::vector<std::byte> mine(8, std::byte{1}), out(12, std::byte{9});
    auto h = e.submit({"", Spec{OpKind::kAllgather, DataType::kUInt8, ReduceOp::kSum, 0, 8, Device::kCuda}, mine.data(),
                       out.data(), out.size()});
    if (!h) return h.status().message();
    auto s = e.waitGathered(*h);
    if (s.isOk()) return "rank " + std::to_string(rank) + " gathered into a short buffer";
    if (s.status().message() != "allgather gathers 16 bytes, but the output buffer holds 12") return s.status().message();
    if (out != std::vector<std::byte>(12, std::byte{9})) return "the short buffer was written";
    return "";
  });
  CHECK(errors == none(2));
}

TEST_CASE("a device failure poisons the staged backend: later GPU calls fail with the first cause", "[unit]") {
  bool failCopies = true;
  auto errors = onStagedRanks(1, [&](int, Engine& e) -> std::string {
    std::vector<float> x{1, 2, 3};
    auto run = [&] {
      auto h = e.submit({"", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 3, Device::kCuda}, x.data(),
                         x.data()});
      return h ? e.wait(*h) : h.status();
    };
    hvd::Status first = run();
    failCopies = false;
    hvd::Status second = run();
    if (first.isOk() || second.isOk()) return "a failed copy went unnoticed";
    if (second.message() != first.message() || first.message().find("device lost") == std::string::npos) {
      return "first: " + first.message() + "; then: " + second.message();
    }
    return "";
  }, 64 << 20, nullptr, &failCopies);
  CHECK(errors == none(1));
}

TEST_CASE("a rank whose GPU call fails on its own device lets its peers fail at once naming it while it lives on",
          "[unit]") {
  // Rank 0's device loses a copy before the host collective; rank 1 is already in it. Before,
  // rank 1 waited there for the whole timeout (10 s here, HVD_TIMEOUT's 30 by default) while
  // rank 0, its call failed, went on living (a program that caught the error).
  bool failCopies = true;
  std::vector<double> failedAfter(2, -1);
  auto errors = onStagedRanks(2, [&](int rank, Engine& e) -> std::string {
    std::vector<float> x{1, 2, 3};
    auto start = std::chrono::steady_clock::now();
    auto h = e.submit({"", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 3, Device::kCuda}, x.data(),
                       x.data()});
    hvd::Status s = h ? e.wait(*h) : h.status();
    failedAfter[static_cast<size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s.isOk()) return "rank " + std::to_string(rank) + "'s allreduce succeeded";
    if (rank == 0) {
      if (s.message().find("device lost") == std::string::npos) return "rank 0: " + s.message();
      std::this_thread::sleep_for(3s);  // alive, as a program that caught the error
      return "";
    }
    return s.message().find("rank 0") == std::string::npos ? "rank 1: " + s.message() : "";
  }, 64 << 20, nullptr, &failCopies);
  CHECK(errors == none(2));
  CHECK(failedAfter[1] >= 0);
  CHECK(failedAfter[1] < 2.0);
}

TEST_CASE("the caller's CUDA stream reaches the GPU backend, and nullptr gives it back its own", "[unit]") {
  void* stream = nullptr;
  auto errors = onStagedRanks(1, [&](int, Engine& e) -> std::string {
    auto* theirs = reinterpret_cast<void*>(std::uintptr_t{0x1234});
    if (auto s = e.setGpuStream(theirs); !s.isOk()) return s.message();
    if (stream != theirs) return "the stream did not reach the staging device";
    if (auto s = e.setGpuStream(nullptr); !s.isOk()) return s.message();
    if (stream != nullptr) return "nullptr did not reach the staging device";
    return "";
  }, 64 << 20, nullptr, nullptr, &stream);
  CHECK(errors == none(1));
}

TEST_CASE("a stream the caller's GPU work must follow reaches the GPU backend's device from the caller's thread",
          "[unit]") {
  void* waited = nullptr;
  StagedOptions options;
  options.waitedFor = &waited;
  auto errors = onStagedRanks(1, [&](int, Engine& e) -> std::string {
    auto* theirs = reinterpret_cast<void*>(std::uintptr_t{0x5678});
    auto waits = e.waitForGpuStream(theirs);
    if (!waits) return waits.status().message();
    if (!*waits || waited != theirs) return "the stream did not reach the staging device";
    // The legacy default stream is a stream like any other here (0), not "hvd's own".
    waits = e.waitForGpuStream(nullptr);
    if (!waits) return waits.status().message();
    return *waits && waited == nullptr ? "" : "0 did not reach the staging device";
  }, 64 << 20, options);
  CHECK(errors == none(1));
}

namespace {

// Rank `rank`'s rows of the serial reduction of `count` single-element rows.
std::vector<std::byte> shareOf(DataType type, ReduceOp op, int size, size_t count, int rank) {
  auto all = expected(type, op, size, count);
  const auto share = hvd::engine::reducescatterShare(count, rank, size);
  const size_t w = hvd::dataTypeSize(type);
  return {all.begin() + static_cast<long>(share.firstRow * w),
          all.begin() + static_cast<long>((share.firstRow + share.rows) * w)};
}

// A GPU reducescatter of `count` single-element rows: this rank's share, or the failure.
hvd::Result<std::vector<std::byte>> gpuReducescatter(Engine& e, int rank, int size, DataType type, ReduceOp op,
                                                      size_t count) {
  auto in = input(type, rank, count);
  const auto share = hvd::engine::reducescatterShare(count, rank, size);
  std::vector<std::byte> out(share.rows * hvd::dataTypeSize(type), std::byte{0x5a});
  auto h = e.submit({"", Spec{OpKind::kReducescatter, type, op, 0, count, Device::kCuda}, in.data(), out.data(),
                     out.size()});
  if (!h) return h.status();
  if (auto s = e.wait(*h); !s.isOk()) return s;
  if (in != input(type, rank, count)) return hvd::Status(hvd::Errc::kInternal, "the input tensor was written");
  return out;
}

// Rank k sends rank d (k + d) % 3 rows of one int32, each 100 * k + d (some blocks empty).
std::vector<std::string> runGpuAlltoalls(int size, const StagedOptions& o) {
  return onStagedRanks(size, [size](int rank, Engine& e) -> std::string {
    std::vector<std::uint64_t> splits;
    std::vector<std::int32_t> send;
    for (int d = 0; d < size; ++d) {
      splits.push_back(static_cast<std::uint64_t>((rank + d) % 3));
      send.insert(send.end(), splits.back(), 100 * rank + d);
    }
    Engine::Submission a{"", Spec{OpKind::kAlltoall, DataType::kInt32, ReduceOp::kSum, 0, send.size(), Device::kCuda},
                         send.data()};
    a.splits = splits;
    auto h = e.submit(std::move(a));
    if (!h) return h.status().message();
    auto got = e.waitGathered(*h);
    if (!got) return got.status().message();
    std::vector<std::int32_t> want;
    std::vector<std::uint64_t> counts;
    for (int k = 0; k < size; ++k) {
      counts.push_back(static_cast<std::uint64_t>((k + rank) % 3));
      want.insert(want.end(), counts.back(), 100 * k + rank);
    }
    auto bytes = onDevice(*got);
    if (!bytes) return bytes.status().message();
    std::vector<std::int32_t> received(bytes->size() / 4);
    if (!bytes->empty()) std::memcpy(received.data(), bytes->data(), bytes->size());
    if (received != want) return "the rows received are wrong";
    return got->counts == counts ? "" : "the counts received are wrong";
  }, 64 << 20, o);
}

}  // namespace

TEST_CASE("GPU reducescatters run on the host backend's reduce-scatter through the staged path for every type and op",
          "[unit]") {
  for (int size : {1, 3, 4}) {
    int scratches = 0;
    auto errors = onStagedRanks(size, [size](int rank, Engine& e) -> std::string {
      return forEveryTypeAndOp([&](DataType type, ReduceOp op) -> std::string {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}}) {
          auto out = gpuReducescatter(e, rank, size, type, op, count);
          if (!out) return out.status().message();
          if (*out != shareOf(type, op, size, count, rank)) {
            return "reducescatter " + std::string(hvd::reduceOpName(op)) + " of " + std::to_string(count) + " " +
                   std::string(hvd::dataTypeName(type)) + " is wrong";
          }
        }
        return "";
      });
    }, 64 << 20, StagedOptions{nullptr, &scratches});
    INFO("ranks " << size);
    CHECK(errors == none(size));
    // The composition (an allreduce of a device copy) asks for device scratch; the primitive does not.
    CHECK(scratches == 0);
  }
}

TEST_CASE("GPU reducescatters over a host backend without a reduce-scatter run as an allreduce and are as right",
          "[unit]") {
  int scratches = 0;
  auto errors = onStagedRanks(3, [](int rank, Engine& e) -> std::string {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
      auto out = gpuReducescatter(e, rank, 3, DataType::kFloat32, ReduceOp::kAverage, count);
      if (!out) return out.status().message();
      if (*out != shareOf(DataType::kFloat32, ReduceOp::kAverage, 3, count, rank)) return "the composition is wrong";
    }
    return "";
  }, 64 << 20, StagedOptions{nullptr, &scratches, nullptr, nullptr, true});
  CHECK(errors == none(3));
  CHECK(scratches == 3);
}

TEST_CASE("GPU alltoalls with uneven and empty blocks give each rank its rows in rank order on the device", "[unit]") {
  for (int size : {1, 2, 3, 4}) {
    INFO("ranks " << size);
    CHECK(runGpuAlltoalls(size, {}) == none(size));
  }
}

TEST_CASE("a GPU alltoall over a host backend without an alltoall fails on every rank naming the backend", "[unit]") {
  auto errors = runGpuAlltoalls(3, StagedOptions{nullptr, nullptr, nullptr, nullptr, true});
  REQUIRE(errors.size() == 3);
  for (const auto& e : errors) {
    CHECK(e.find("the cuda-staged backend has no alltoall for GPU tensors") != std::string::npos);
  }
}
