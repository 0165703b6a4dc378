// runtime/backends/tcp/tcp_transport_test.cc: the ring collectives over real TCP on loopback,
// ranks as threads (Catch2 assertions only on the main thread): every type and operation,
// awkward lengths, every rank count from 1 to 8, checked against a serial computation;
// and a rank that dies mid-loop.
#include "runtime/backends/tcp/tcp_transport.h"

#include <catch2/catch.hpp>

#include <sched.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "collectives/adasum.h"
#include "collectives/allreduce.h"
#include "collectives/combine_allreduce.h"
#include "collectives/exchange_reduce.h"
#include "collectives/halving_doubling.h"
#include "collectives/halving_schedule.h"
#include "collectives/hypercube_alltoall.h"
#include "collectives/ring_alltoall.h"
#include "collectives/ring_collectives.h"
#include "runtime/backends/tcp/host_allreduce.h"
#include "runtime/backends/tcp/host_arena.h"
#include "runtime/backends/tcp/host_board.h"
#include "runtime/common/thread_slice.h"
#include "tests/support/memory_store.h"
#include "tests/support/serial_adasum.h"
#include "tests/support/serial_reduce.h"
#include "tests/support/skip.h"

using namespace std::chrono_literals;
using hvd::collectives::DataType;
using hvd::collectives::ReduceOp;
namespace hc = hvd::collectives;

namespace {

using hvd::test::MemoryStore;

// Whether the rings onRing builds use shared memory between neighbours (every thread shares
// this host, so they can); tests that move data run both ways through GENERATE.
bool useSharedMemory = true;
// How the rings onRing builds wait (TcpTransportOptions' default unless a test sets it).
hvd::backends::tcp::WaitPolicy ringWaiting = hvd::backends::tcp::TcpTransportOptions{}.waiting;

// Runs body(rank, ring) on `size` threads, each with its own ring; returns each rank's
// failure message ("" when it succeeded).
template <typename Body>
std::vector<std::string> onRing(int size, Body body, std::chrono::milliseconds timeout = 10s) {
  MemoryStore store;
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      hvd::backends::tcp::TcpTransportOptions options;
      options.secret = "test-secret";
      options.timeout = timeout;
      options.sharedMemory = useSharedMemory;
      options.waiting = ringWaiting;
      auto ring = hvd::backends::tcp::TcpTransport::connect(r, size, store, options);
      if (!ring) {
        errors[static_cast<size_t>(r)] = "connect: " + ring.status().message();
        return;
      }
      errors[static_cast<size_t>(r)] = body(r, **ring);
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// Small integers, so float sums are exact and the comparison can be too.
double valueFor(int rank, size_t index) { return static_cast<double>((rank * 7 + static_cast<int>(index) * 3) % 13 - 6); }

template <typename T>
T cast(double v) { return static_cast<T>(v); }

using Algorithm = hvd::Status (*)(hc::Transport&, void*, size_t, DataType, ReduceOp);

hvd::Status autoAllreduce(hc::Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  return hc::allreduce(t, data, count, type, op);
}

template <typename T>
std::string checkAllreduce(hc::Transport& ring, int size, DataType type, ReduceOp op, size_t count,
                           Algorithm algorithm = autoAllreduce) {
  size_t width = hc::dataTypeSize(type);
  std::vector<std::byte> data(count * width), expected(count * width);
  auto store = [&](std::vector<std::byte>& buf, size_t i, double v) {
    if (type == DataType::kFloat16) {
      uint16_t h = hc::floatToHalf(static_cast<float>(v));
      std::memcpy(buf.data() + i * 2, &h, 2);
    } else if (type == DataType::kBFloat16) {
      uint16_t h = hc::floatToBfloat16(static_cast<float>(v));
      std::memcpy(buf.data() + i * 2, &h, 2);
    } else {
      T t = cast<T>(v);
      std::memcpy(buf.data() + i * width, &t, width);
    }
  };
  for (size_t i = 0; i < count; ++i) {
    store(data, i, valueFor(ring.rank(), i));
    double acc = hvd::test::serialReduce(type, op, size, [&](int r) { return valueFor(r, i); });
    if (type == DataType::kUInt8 || type == DataType::kInt8) acc = static_cast<double>(static_cast<T>(static_cast<long long>(acc)));
    store(expected, i, acc);
  }
  auto s = algorithm(ring, data.data(), count, type, op);
  if (!s.isOk()) return s.message();
  if (data != expected) {
    return std::string(hc::dataTypeName(type)) + " " + std::string(hc::reduceOpName(op)) + " count " +
           std::to_string(count) + ": wrong result on rank " + std::to_string(ring.rank());
  }
  return "";
}

}  // namespace

TEST_CASE("every allreduce algorithm equals the serial result for every type, op and length, 1 to 8 ranks", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  for (int size = 1; size <= 8; ++size) {
    auto errors = onRing(size, [size](int, hc::Transport& ring) -> std::string {
      std::vector<Algorithm> algorithms{hc::ringAllreduceSmall, hc::ringAllreduceLarge, hc::recursiveDoublingAllreduce,
                                        hc::halvingDoublingAllreduce};
      const char* names[] = {"ring small: ", "ring large: ", "recursive doubling: ", "halving-doubling: "};
      for (size_t a = 0; a < algorithms.size(); ++a) {
        Algorithm algorithm = algorithms[a];
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1009), size_t(size * 3 + 1)}) {
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
            // Products of 8 ranks' values overflow small types: they keep sum/min/max/avg.
            std::string e = checkAllreduce<float>(ring, size, DataType::kFloat32, op, count, algorithm);
            if (e.empty()) e = checkAllreduce<double>(ring, size, DataType::kFloat64, op, count, algorithm);
            if (e.empty()) e = checkAllreduce<int32_t>(ring, size, DataType::kInt32, op, count, algorithm);
            if (e.empty()) e = checkAllreduce<int64_t>(ring, size, DataType::kInt64, op, count, algorithm);
            if (e.empty() && op != ReduceOp::kProduct) e = checkAllreduce<int8_t>(ring, size, DataType::kInt8, op, count, algorithm);
            if (e.empty() && op != ReduceOp::kProduct) e = checkAllreduce<uint16_t>(ring, size, DataType::kFloat16, op, count, algorithm);
            if (e.empty() && op != ReduceOp::kProduct) e = checkAllreduce<uint16_t>(ring, size, DataType::kBFloat16, op, count, algorithm);
            if (!e.empty()) return names[a] + e;
          }
        }
      }
      return "";
    });
    for (int r = 0; r < size; ++r) {
      INFO("size " << size << " rank " << r);
      CHECK(errors[static_cast<size_t>(r)] == "");
    }
  }
}

// An allreduce made of a reduce-scatter with an awkward split (the remainder on the last
// rank, rank 1's part empty and given to rank 0 from 3 ranks) and an allgather of the parts,
// so that checkAllreduce checks every rank's part against the serial result.
hvd::Status scatterThenGather(hc::Transport& t, void* data, size_t count, DataType type, ReduceOp op) {
  const size_t n = static_cast<size_t>(t.size()), width = hc::dataTypeSize(type);
  std::vector<size_t> counts(n, count / n), bytes;
  counts[n - 1] += count % n;
  if (n > 2) counts[0] += counts[1], counts[1] = 0;
  for (size_t c : counts) bytes.push_back(c * width);
  std::vector<std::byte> part(counts[static_cast<size_t>(t.rank())] * width);
  HVD_RETURN_IF_ERROR(hc::ringReduceScatterv(t, data, counts, type, op, part.data()));
  return hc::ringAllgatherv(t, part.data(), bytes, data);
}

TEST_CASE("a reduce-scatter with any split gives each rank its part of the serial result for every type and op", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  for (int size = 1; size <= 6; ++size) {
    auto errors = onRing(size, [size](int, hc::Transport& ring) -> std::string {
      for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1009), size_t(size * 3 + 1), size_t(300007)}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
          std::string e = checkAllreduce<float>(ring, size, DataType::kFloat32, op, count, scatterThenGather);
          if (e.empty()) e = checkAllreduce<int64_t>(ring, size, DataType::kInt64, op, count, scatterThenGather);
          if (e.empty() && op != ReduceOp::kProduct) {
            e = checkAllreduce<uint16_t>(ring, size, DataType::kBFloat16, op, count, scatterThenGather);
          }
          if (!e.empty()) return e;
        }
      }
      return "";
    });
    for (int r = 0; r < size; ++r) {
      INFO("size " << size << " rank " << r);
      CHECK(errors[static_cast<size_t>(r)] == "");
    }
  }
}

TEST_CASE("a reduce-scatter with a count list of the wrong length is refused before any traffic", "[mp][collectives]") {
  auto errors = onRing(2, [](int, hc::Transport& ring) -> std::string {
    std::vector<size_t> counts{1, 1, 1};
    float f[3] = {};
    auto s = hc::ringReduceScatterv(ring, f, counts, DataType::kFloat32, ReduceOp::kSum, f);
    return s.isOk() ? "accepted" : s.message();
  });
  for (const auto& e : errors) CHECK(e == "reducescatter: 3 counts given for 2 ranks");
}

using AlltoallAlgorithm = hvd::Status (*)(hc::Transport&, const void*, std::span<const size_t>, void*,
                                          std::vector<std::byte>&);

TEST_CASE("an alltoall delivers every block to its rank in source order, empty and large blocks included, 1 to 16 ranks", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  const bool ring = GENERATE(true, false);  // else the hypercube, on powers of two
  INFO("shared memory " << useSharedMemory << (ring ? ", ring" : ", hypercube"));
  for (int size : {1, 2, 3, 4, 5, 7, 8, 16}) {
    if (!ring && (size & (size - 1)) != 0) continue;
    AlltoallAlgorithm algorithm = ring ? hc::ringAlltoallv : hc::hypercubeAlltoallv;
    // What `from` sends `to`: often nothing, sometimes a few bytes, once 200 KiB (from 1 to 0).
    auto bytesOf = [](int from, int to) -> size_t {
      if (from == 1 && to == 0) return 200003;
      return static_cast<size_t>((from * 5 + to * 3) % 7 == 0 ? 0 : (from * 13 + to * 7) % 29);
    };
    auto byteAt = [](int from, int to, size_t i) { return static_cast<unsigned char>(from * 41 + to * 17 + i * 3); };
    auto errors = onRing(size, [&](int rank, hc::Transport& ring) -> std::string {
      std::vector<size_t> matrix;
      for (int f = 0; f < size; ++f) {
        for (int t = 0; t < size; ++t) matrix.push_back(bytesOf(f, t));
      }
      std::vector<unsigned char> send;
      for (int t = 0; t < size; ++t) {
        for (size_t i = 0; i < bytesOf(rank, t); ++i) send.push_back(byteAt(rank, t, i));
      }
      size_t total = 0;
      for (int f = 0; f < size; ++f) total += bytesOf(f, rank);
      std::vector<std::byte> scratch;  // kept from the first call for the second
      for (int call = 0; call < 2; ++call) {
        std::vector<unsigned char> out(total, 0xEE);
        if (auto s = algorithm(ring, send.data(), matrix, out.data(), scratch); !s.isOk()) return s.message();
        size_t at = 0;
        for (int f = 0; f < size; ++f) {
          for (size_t i = 0; i < bytesOf(f, rank); ++i, ++at) {
            if (out[at] != byteAt(f, rank, i)) {
              return "call " + std::to_string(call) + ": block from rank " + std::to_string(f) + " wrong at byte " +
                     std::to_string(i);
            }
          }
        }
      }
      return "";
    });
    for (int r = 0; r < size; ++r) {
      INFO("size " << size << " rank " << r);
      CHECK(errors[static_cast<size_t>(r)] == "");
    }
  }
}

TEST_CASE("an alltoall with a matrix of the wrong size, or a hypercube off a power of two, is refused before any traffic", "[mp][collectives]") {
  auto errors = onRing(2, [](int, hc::Transport& ring) -> std::string {
    std::vector<size_t> matrix{1, 1};
    char c[2] = {};
    std::vector<std::byte> scratch;
    auto s = hc::ringAlltoallv(ring, c, matrix, c, scratch);
    auto h = hc::hypercubeAlltoallv(ring, c, matrix, c, scratch);
    return s.isOk() || h.isOk() ? "accepted" : s.message() + "; " + h.message();
  });
  for (const auto& e : errors) {
    CHECK(e == "alltoall: 2 block sizes given for 2 ranks (4 needed); alltoall: 2 block sizes given for 2 ranks (4 needed)");
  }
  auto three = onRing(3, [](int, hc::Transport& ring) -> std::string {
    std::vector<size_t> matrix(9, 0);
    std::vector<std::byte> scratch;
    auto h = hc::hypercubeAlltoallv(ring, nullptr, matrix, nullptr, scratch);
    return h.isOk() ? "accepted" : h.message();
  });
  for (const auto& e : three) CHECK(e == "hypercube alltoall: 3 ranks is not a power of two");
}

TEST_CASE("allgatherv gathers blocks of different sizes, empty ones included, in rank order", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  for (int size : {1, 2, 3, 4, 7}) {
    // Rank k contributes (k * 37) % 11 bytes, sometimes none, and one large block.
    auto bytesFor = [](int k) { return k == 2 ? size_t{300007} : static_cast<size_t>((k * 37) % 11); };
    auto errors = onRing(size, [size, bytesFor](int rank, hc::Transport& ring) -> std::string {
      std::vector<size_t> sizes;
      size_t total = 0;
      for (int k = 0; k < size; ++k) sizes.push_back(bytesFor(k)), total += bytesFor(k);
      std::vector<unsigned char> mine(bytesFor(rank));
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<unsigned char>(rank * 31 + i);
      std::vector<unsigned char> all(total, 0xEE);
      if (auto s = hc::ringAllgatherv(ring, mine.data(), sizes, all.data()); !s.isOk()) return s.message();
      size_t at = 0;
      for (int k = 0; k < size; ++k) {
        for (size_t i = 0; i < bytesFor(k); ++i, ++at) {
          if (all[at] != static_cast<unsigned char>(k * 31 + i)) return "block of rank " + std::to_string(k) + " wrong";
        }
      }
      return "";
    });
    for (const auto& e : errors) CHECK(e == "");
  }
}

TEST_CASE("allgatherv with a size list of the wrong length is refused before any traffic", "[mp][collectives]") {
  auto errors = onRing(2, [](int, hc::Transport& ring) -> std::string {
    std::vector<size_t> sizes{1};
    char c = 0;
    auto s = hc::ringAllgatherv(ring, &c, sizes, &c);
    return s.isOk() ? "accepted" : s.message();
  });
  for (const auto& e : errors) CHECK(e == "allgatherv: 1 sizes given for 2 ranks");
}

TEST_CASE("a large allreduce of 2^20 floats is exact on 4 ranks", "[mp][collectives]") {
  constexpr size_t kQuarterMiBOfDoubles = (256 * 1024) / 8;
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  auto errors = onRing(4, [](int, hc::Transport& ring) { return checkAllreduce<float>(ring, 4, DataType::kFloat32, ReduceOp::kSum, 1 << 20); });
  for (const auto& e : errors) CHECK(e == "");
  // Chunks of unequal length, the sides of a link sending different amounts (an odd 256 KiB
  // and more each, so TCP hands them over in many pieces).
  auto uneven = onRing(3, [](int, hc::Transport& ring) {
    return checkAllreduce<double>(ring, 3, DataType::kFloat64, ReduceOp::kMax, 3 * kQuarterMiBOfDoubles + 2);
  });
  for (const auto& e : uneven) CHECK(e == "");
  // Halves of odd length: the partners' segments differ by one element.
  auto odd = onRing(4, [](int, hc::Transport& ring) {
    return checkAllreduce<double>(ring, 4, DataType::kFloat64, ReduceOp::kSum, 4 * kQuarterMiBOfDoubles + 3,
                                  hc::halvingDoublingAllreduce);
  });
  for (const auto& e : odd) CHECK(e == "");
}

TEST_CASE("every rank ends with the same bits, even for min and max of -0 and +0 or of NaN and a number", "[mp][collectives]") {
  // min and max are not symmetric in their operands: min(-0, +0) is -0 but min(+0, -0) is
  // +0, max(NaN, 1) is NaN but max(1, NaN) is 1. An algorithm that reduced in a different
  // order on different ranks would give them different answers here. With these values
  // std::min and std::max return their first operand, so reducing lower ranks first, in
  // whatever tree, leaves rank 0's values everywhere.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int size : {2, 3, 4, 6, 7, 8}) {
    for (Algorithm algorithm : {hc::recursiveDoublingAllreduce, hc::halvingDoublingAllreduce}) {
      std::vector<std::vector<uint32_t>> bits(static_cast<size_t>(size)), inputs(static_cast<size_t>(size));
      auto errors = onRing(size, [&](int rank, hc::Transport& ring) -> std::string {
        std::vector<uint32_t> out, in;
        for (int round = 0; round < 3; ++round) {
          ReduceOp op = round == 1 ? ReduceOp::kMin : ReduceOp::kMax;
          // Long enough for halving-doubling to split it at every step.
          std::vector<float> data(64);
          for (size_t i = 0; i < data.size(); ++i) {
            bool odd = (rank + static_cast<int>(i) + round) % 2 == 1;
            data[i] = round < 2 ? (odd ? 0.0f : -0.0f) : (odd ? nan : 1.0f);
          }
          for (float f : data) in.push_back(std::bit_cast<uint32_t>(f));
          if (auto s = algorithm(ring, data.data(), data.size(), DataType::kFloat32, op); !s.isOk()) return s.message();
          for (float f : data) out.push_back(std::bit_cast<uint32_t>(f));
        }
        bits[static_cast<size_t>(rank)] = out;
        inputs[static_cast<size_t>(rank)] = in;
        return "";
      });
      for (const auto& e : errors) CHECK(e == "");
      INFO("size " << size);
      CHECK(bits[0] == inputs[0]);
      for (int r = 1; r < size; ++r) {
        INFO("rank " << r);
        CHECK(bits[static_cast<size_t>(r)] == bits[0]);
      }
    }
  }
}

TEST_CASE("Adasum gives every rank the same bits, each tensor of a fused buffer combined over the tree of ranks, 1 to 8 ranks",
          "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  const std::vector<size_t> counts{5, 0, 37, 1, 300, 2};  // one empty, one shorter than the ranks
  size_t total = 0;
  for (size_t c : counts) total += c;
  // Rank r's element i: a value whose tensors are neither parallel nor orthogonal.
  auto input = [](int rank, size_t i) {
    return std::sin(0.37 * static_cast<double>(i) + 1.3 * rank) * (1 + 0.25 * rank) + (rank % 3 == 0 ? 0.5 : -0.2);
  };
  for (DataType type : {DataType::kFloat32, DataType::kFloat64}) {
    for (int size = 1; size <= 8; ++size) {
      INFO(hc::dataTypeName(type) << " size " << size << " shared memory " << useSharedMemory);
      std::vector<std::vector<double>> results(static_cast<size_t>(size));
      std::vector<std::vector<std::byte>> bits(static_cast<size_t>(size));
      auto errors = onRing(size, [&](int rank, hc::Transport& ring) -> std::string {
        std::vector<double> wide(total);
        for (size_t i = 0; i < total; ++i) wide[i] = input(rank, i);
        std::vector<float> narrow(wide.begin(), wide.end());
        void* data = type == DataType::kFloat32 ? static_cast<void*>(narrow.data()) : wide.data();
        std::vector<std::byte> scratch;
        if (auto s = hc::adasumAllreduce(ring, data, type, counts, scratch); !s.isOk()) return s.message();
        if (type == DataType::kFloat32) wide.assign(narrow.begin(), narrow.end());
        const auto* b = static_cast<const std::byte*>(data);
        bits[static_cast<size_t>(rank)].assign(b, b + total * hc::dataTypeSize(type));
        results[static_cast<size_t>(rank)] = wide;
        return "";
      });
      for (const auto& e : errors) REQUIRE(e == "");
      for (int r = 1; r < size; ++r) CHECK(bits[static_cast<size_t>(r)] == bits[0]);
      size_t start = 0;
      for (size_t count : counts) {
        std::vector<std::vector<double>> leaves(static_cast<size_t>(size));
        for (int r = 0; r < size; ++r) {
          for (size_t i = 0; i < count; ++i) {
            double v = input(r, start + i);
            leaves[static_cast<size_t>(r)].push_back(type == DataType::kFloat32 ? static_cast<float>(v) : v);
          }
        }
        std::vector<double> expected = hvd::test::adasumTree(leaves);
        for (size_t i = 0; i < count; ++i) {
          INFO("tensor at " << start << " element " << i);
          const double epsilon = type == DataType::kFloat32 ? 1e-5 : 1e-12;
          CHECK(results[0][start + i] == Approx(expected[i]).epsilon(epsilon).margin(1e-6));
        }
        start += count;
      }
    }
  }
}

TEST_CASE("Adasum refuses integer tensors before any traffic", "[mp][collectives]") {
  auto errors = onRing(2, [](int, hc::Transport& ring) -> std::string {
    std::vector<std::int32_t> data(4, 1);
    const size_t counts[] = {4};
    std::vector<std::byte> scratch;
    auto s = hc::adasumAllreduce(ring, data.data(), DataType::kInt32, counts, scratch);
    return s.code() == hvd::Errc::kInvalidArgument ? s.message() : "accepted";
  });
  for (const auto& e : errors) CHECK(e == "Adasum combines float16, bfloat16, float32 and float64 tensors, not int32");
}

TEST_CASE("a transport refuses a rank it has no link to", "[mp][collectives]") {
  // On 6 ranks rank 0's peers are 1 and 5 (ring), 1 (its fold pair), 2 and 4 (partners): not 3.
  auto unlinked = onRing(6, [](int rank, hc::Transport& ring) -> std::string {
    if (rank != 0) return "";
    std::byte b{1};
    auto s = ring.exchangeWith(3, {&b, 1}, 3, {});
    return s.code() == hvd::Errc::kInvalidArgument ? s.message() : "accepted";
  });
  CHECK(unlinked[0] == "rank 0 has no link to rank 3 (not one of its collective peers)");
}

TEST_CASE("allgather, broadcast from every root and barrier agree on every rank", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  for (int size : {1, 2, 3, 5}) {
    auto errors = onRing(size, [size](int rank, hc::Transport& ring) -> std::string {
      std::vector<int> mine{rank, rank * rank}, all(static_cast<size_t>(size) * 2);
      if (auto s = hc::ringAllgather(ring, mine.data(), sizeof(int) * 2, all.data()); !s.isOk()) return s.message();
      for (int r = 0; r < size; ++r) {
        if (all[static_cast<size_t>(2 * r)] != r || all[static_cast<size_t>(2 * r + 1)] != r * r) return "allgather wrong";
      }
      for (int root = 0; root < size; ++root) {
        // Under one shared buffer, and several buffers' worth with an odd end; every byte's
        // value depends on its place.
        for (size_t bytes : {size_t{100001}, size_t{3 * 1024 * 1024 + 12345}}) {
          std::vector<char> data(bytes, '?');
          for (size_t i = 0; rank == root && i < bytes; ++i) data[i] = static_cast<char>('a' + (root + i) % 26);
          if (auto s = hc::ringBroadcast(ring, data.data(), data.size(), root); !s.isOk()) return s.message();
          for (size_t i = 0; i < bytes; ++i) {
            if (data[i] != static_cast<char>('a' + (root + i) % 26)) return "broadcast from " + std::to_string(root) + " wrong";
          }
        }
      }
      for (int i = 0; i < 3; ++i) {
        if (auto s = hc::ringBarrier(ring); !s.isOk()) return s.message();
      }
      return "";
    });
    for (const auto& e : errors) CHECK(e == "");
  }
}

TEST_CASE("when a rank dies mid-loop every survivor fails within twice the timeout, naming a peer, and stays failed", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  const auto timeout = 1000ms;
  std::vector<std::chrono::milliseconds> took(4);
  std::vector<std::string> second(4);
  auto errors = onRing(4, [&](int rank, hc::Transport& ring) -> std::string {
    auto& tcp = static_cast<hvd::backends::tcp::TcpTransport&>(ring);
    std::vector<float> data(1000, 1.0f);
    for (int i = 0; i < 1000; ++i) {
      if (rank == 2 && i == 20) {
        tcp.abortForTest();  // as if the process had crashed
        return "aborted";
      }
      auto start = std::chrono::steady_clock::now();
      auto s = hc::allreduce(ring, data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
      if (!s.isOk()) {
        took[static_cast<size_t>(rank)] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        auto again = hc::allreduce(ring, data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
        second[static_cast<size_t>(rank)] = again.message();
        return s.message();
      }
    }
    return "no error";
  }, timeout);
  for (int r : {0, 1, 3}) {
    INFO("rank " << r << ": " << errors[static_cast<size_t>(r)]);
    CHECK(errors[static_cast<size_t>(r)].rfind("rank ", 0) == 0);  // names the peer
    CHECK((errors[static_cast<size_t>(r)].find("closed its connection") != std::string::npos ||
           errors[static_cast<size_t>(r)].find("no data from") != std::string::npos));
    CHECK(took[static_cast<size_t>(r)] < 2 * timeout);
    CHECK(second[static_cast<size_t>(r)] == errors[static_cast<size_t>(r)]);  // poisoned: the first error again
  }
}

TEST_CASE("a rank whose call fails closes its links, so ranks waiting on it fail at once, not at their timeout", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  // Nine ranks run the ring on a large buffer, each step waiting on its left neighbour
  // only; ranks 4, 6 and 7 have no link to rank 0 at all. Every rank keeps its transport
  // open after its error, as a process that caught it would, so only the cascade from
  // rank to rank can tell the ones further round the ring.
  const auto timeout = 5000ms;
  constexpr int kSize = 9;
  auto linked = hc::collectivePeers(0, kSize);
  for (int unlinked : {4, 6, 7}) REQUIRE(std::find(linked.begin(), linked.end(), unlinked) == linked.end());
  std::atomic<int> failed{0};
  std::atomic<bool> aborted{false};
  std::chrono::steady_clock::time_point abortedAt;
  std::vector<std::chrono::milliseconds> after(kSize);
  auto errors = onRing(kSize, [&](int rank, hc::Transport& ring) -> std::string {
    auto& tcp = static_cast<hvd::backends::tcp::TcpTransport&>(ring);
    std::vector<float> data(64 * 1024, 1.0f);  // 256 KiB: the ring, not recursive doubling
    std::string error = "no error";
    for (int i = 0; i < 100000; ++i) {
      if (rank == 0 && i == 20) {
        abortedAt = std::chrono::steady_clock::now();
        aborted = true;
        tcp.abortForTest();
        error = "aborted";
        break;
      }
      auto s = hc::allreduce(ring, data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
      if (!s.isOk()) {
        while (!aborted) std::this_thread::yield();
        after[static_cast<size_t>(rank)] =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - abortedAt);
        error = s.message();
        break;
      }
    }
    ++failed;
    auto until = std::chrono::steady_clock::now() + 4 * timeout;
    while (failed < kSize && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    return error;
  }, timeout);
  for (int r = 1; r < kSize; ++r) {
    INFO("rank " << r << ": " << errors[static_cast<size_t>(r)] << " after " << after[static_cast<size_t>(r)].count() << " ms");
    CHECK(errors[static_cast<size_t>(r)].find("closed its connection") != std::string::npos);
    CHECK(after[static_cast<size_t>(r)] < timeout / 2);
  }
}

TEST_CASE("peers on one host exchange through shared memory, and through TCP when it is turned off", "[mp][collectives]") {
  for (bool shared : {true, false}) {
    useSharedMemory = shared;
    for (int size : {2, 3, 4}) {
      auto errors = onRing(size, [shared](int, hc::Transport& ring) -> std::string {
        auto& tcp = static_cast<hvd::backends::tcp::TcpTransport&>(ring);
        if (tcp.peers() != hc::collectivePeers(ring.rank(), ring.size())) return "wrong peers";
        for (int peer : tcp.peers()) {
          if (tcp.sharedMemoryWith(peer) != shared) return "wrong path to rank " + std::to_string(peer);
        }
        // More than the shared buffer holds, so both ends wrap around it many times.
        std::vector<int32_t> data(3 * hvd::backends::tcp::ShmLink::kCapacity / 4 + 17, 1);
        auto s = hc::allreduce(ring, data.data(), data.size(), DataType::kInt32, ReduceOp::kSum);
        if (!s.isOk()) return s.message();
        for (int32_t v : data) {
          if (v != ring.size()) return "wrong sum";
        }
        // Leave the streams at an odd position (3-byte blocks), then reduce doubles straight
        // out of the buffer across its end: pieces must stay whole and aligned.
        std::vector<size_t> threes(static_cast<size_t>(ring.size()), 3);
        std::vector<char> mine(3, 'x'), all(3 * threes.size());
        if (auto g = hc::ringAllgatherv(ring, mine.data(), threes, all.data()); !g.isOk()) return g.message();
        return checkAllreduce<double>(ring, ring.size(), DataType::kFloat64, ReduceOp::kSum,
                                      hvd::backends::tcp::ShmLink::kCapacity / 8 * ring.size() + 7);
      });
      for (const auto& e : errors) CHECK(e == "");
    }
  }
  useSharedMemory = true;
}

TEST_CASE("ranks the plan puts on different hosts never share memory, even where they could map it", "[mp][collectives]") {
  // Four ranks as threads of one process, "on" hosts 0, 0, 1, 1: only same-host pairs
  // may take shared memory; the others stay on TCP and the sums stay right.
  MemoryStore store;
  const int hostOf[] = {0, 0, 1, 1};
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      hvd::backends::tcp::TcpTransportOptions options;
      options.secret = "test-secret";
      options.timeout = 10s;
      options.host = hostOf[r];
      auto ring = hvd::backends::tcp::TcpTransport::connect(r, 4, store, options);
      if (!ring) {
        errors[static_cast<size_t>(r)] = "connect: " + ring.status().message();
        return;
      }
      auto& tcp = **ring;
      for (int peer : tcp.peers()) {
        if (tcp.sharedMemoryWith(peer) != (hostOf[peer] == hostOf[r])) {
          errors[static_cast<size_t>(r)] = "wrong path to rank " + std::to_string(peer);
          return;
        }
      }
      errors[static_cast<size_t>(r)] = checkAllreduce<float>(tcp, 4, DataType::kFloat32, ReduceOp::kSum, 100003);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e == "");
}

TEST_CASE("ranks that share their cores with busy loops find their spins contended and still agree", "[mp][collectives]") {
  // Rank r and a busy loop on the r-th CPU this process may use (both on one when it may
  // use one): a rank waiting for its peer then spins while the peer's core runs the other
  // busy loop, and loses its own core to its busy loop for a whole time slice: the policy
  // must see that.
  cpu_set_t all;
  CPU_ZERO(&all);
  REQUIRE(::sched_getaffinity(0, sizeof all, &all) == 0);
  std::vector<cpu_set_t> cores;
  for (int c = 0; c < CPU_SETSIZE && cores.size() < 2; ++c) {
    if (!CPU_ISSET(c, &all)) continue;
    cores.emplace_back();
    CPU_ZERO(&cores.back());
    CPU_SET(c, &cores.back());
  }
  if (cores.size() < 2) cores.push_back(cores[0]);
  // Spinning as a rank with its own core would: flat out, then yielding, for 2 ms.
  ringWaiting = hvd::backends::tcp::WaitPolicy(2, 2, nullptr);
  for (bool shared : {true, false}) {
    useSharedMemory = shared;
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (const cpu_set_t& core : cores) {
      busy.emplace_back([&stop, core] {
        ::sched_setaffinity(0, sizeof core, &core);
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    }
    auto errors = onRing(2, [&](int rank, hc::Transport& ring) -> std::string {
      const cpu_set_t& core = cores[static_cast<size_t>(rank)];
      if (::sched_setaffinity(0, sizeof core, &core) != 0) return "sched_setaffinity failed";
      auto& tcp = static_cast<hvd::backends::tcp::TcpTransport&>(ring);
      // Until one has seen it (the count of ranks that have is reduced along: only a rank
      // that arrives first waits, and one may always come second), or 10 s, which the ranks
      // also agree on through the sum. Not a count of steps: the scheduler lets fresh
      // threads run ahead of the busy loops for a while, and 20,000 steps (30 ms over
      // shared memory) fitted into that in one run of four.
      const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (int i = 0;; ++i) {
        int32_t v[3] = {rank + i, tcp.waitPolicy().contendedSpins() > 0, std::chrono::steady_clock::now() > giveUp};
        if (auto s = hc::allreduce(ring, v, 3, DataType::kInt32, ReduceOp::kSum); !s.isOk()) return s.message();
        if (v[0] != 1 + 2 * i) return "wrong sum at step " + std::to_string(i);
        if (v[1] > 0) return "";
        if (v[2] > 0) return "neither rank saw its spin contended in 10 s (" + std::to_string(i + 1) + " steps)";
      }
    });
    stop = true;
    for (auto& t : busy) t.join();
    INFO((shared ? "shared memory" : "TCP"));
    for (const auto& e : errors) CHECK(e == "");
  }
  useSharedMemory = true;
  ringWaiting = hvd::backends::tcp::TcpTransportOptions{}.waiting;
}

TEST_CASE("ranks that outnumber their cores wait with a short time slice and ranks with a core each keep the default", "[mp][collectives]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  const auto kernels = *hvd::threadSlice();
  for (int cores : {1, 2}) {
    ringWaiting = hvd::backends::tcp::WaitPolicy(cores, 2, nullptr);
    auto expected = cores == 1 ? hvd::backends::tcp::WaitPolicy::kSharedCoreSlice : kernels;
    for (bool shared : {true, false}) {
      useSharedMemory = shared;
      auto errors = onRing(2, [&](int rank, hc::Transport& ring) -> std::string {
        // Rank 1 comes late, so rank 0 waits (and each waits in the barrier-like sums after).
        if (rank == 1) std::this_thread::sleep_for(5ms);
        for (int i = 0; i < 100; ++i) {
          int32_t v = rank;
          if (auto s = hc::allreduce(ring, &v, 1, DataType::kInt32, ReduceOp::kSum); !s.isOk()) return s.message();
          if (v != 1) return "wrong sum at step " + std::to_string(i);
        }
        auto slice = hvd::threadSlice();
        if (rank == 0 && slice != expected) {
          return "rank 0's slice is " + (slice ? std::to_string(slice->count()) + " us" : "unknown") + ", not " +
                 std::to_string(expected.count());
        }
        return "";
      });
      INFO((shared ? "shared memory" : "TCP") << ", " << cores << " core(s) for 2 ranks");
      for (const auto& e : errors) CHECK(e == "");
    }
  }
  useSharedMemory = true;
  ringWaiting = hvd::backends::tcp::TcpTransportOptions{}.waiting;
}

TEST_CASE("a rank asleep in a wait is counted on the host board until its peer's bytes wake it", "[mp][collectives]") {
  // Waits that sleep at once, all the ranks' policies sharing one board.
  ringWaiting = hvd::backends::tcp::WaitPolicy(hvd::backends::tcp::WaitPolicy::Spin{0, false, 0us});
  auto board = hvd::backends::tcp::HostBoard::inProcess();
  ringWaiting.shareBoard(board, 0);  // a fixed spin notes no CPU: one seat does for all
  for (bool shared : {true, false}) {
    useSharedMemory = shared;
    auto errors = onRing(2, [&](int rank, hc::Transport& ring) -> std::string {
      int32_t v = rank;
      if (rank == 0) {
        // Rank 1 is in its allreduce by now, asleep until these bytes come.
        const auto giveUp = std::chrono::steady_clock::now() + 5s;
        while (board->sleeping() == 0 && std::chrono::steady_clock::now() < giveUp) std::this_thread::sleep_for(1ms);
        if (board->sleeping() != 1) return "rank 1 waiting: " + std::to_string(board->sleeping()) + " asleep, not 1";
      }
      if (auto s = hc::allreduce(ring, &v, 1, DataType::kInt32, ReduceOp::kSum); !s.isOk()) return s.message();
      return v == 1 ? "" : "wrong sum";
    });
    INFO((shared ? "shared memory" : "TCP"));
    for (const auto& e : errors) CHECK(e == "");
    CHECK(board->sleeping() == 0);
  }
  useSharedMemory = true;
  ringWaiting = hvd::backends::tcp::TcpTransportOptions{}.waiting;
}

TEST_CASE("a combined allreduce reduces each lane with its own operation and gives a typed lane the typed allreduce's bits", "[mp][collectives]") {
  for (int size = 1; size <= 8; ++size) {
    INFO("np " << size);
    auto errors = onRing(size, [size](int rank, hc::Transport& ring) -> std::string {
      // Lane one: 7 bytes, minimum. Lane two (from offset 16): 33 random floats, sum.
      std::mt19937 rng(static_cast<unsigned>(rank * 31 + 1));
      std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
      std::vector<float> floats(33);
      for (float& f : floats) f = dist(rng);
      std::vector<float> typed = floats;
      std::vector<std::byte> buffer(16 + floats.size() * 4);
      for (int i = 0; i < 7; ++i) buffer[static_cast<size_t>(i)] = static_cast<std::byte>((rank * 5 + i * 3) % 11);
      std::memcpy(buffer.data() + 16, floats.data(), floats.size() * 4);
      auto combine = [](std::byte* dst, const std::byte* src, hc::Operands order) {
        hc::reduceInto(dst, src, 7, DataType::kUInt8, ReduceOp::kMin);
        hc::reduceInto(dst + 16, src + 16, 33, DataType::kFloat32, ReduceOp::kSum, order);
      };
      if (auto s = hc::combineAllreduce(ring, buffer, combine); !s.isOk()) return s.message();
      if (auto s = hc::allreduce(ring, typed.data(), typed.size(), DataType::kFloat32, ReduceOp::kSum); !s.isOk()) return s.message();
      for (int i = 0; i < 7; ++i) {
        int want = 255;
        for (int r = 0; r < size; ++r) want = std::min(want, (r * 5 + i * 3) % 11);
        if (buffer[static_cast<size_t>(i)] != static_cast<std::byte>(want)) return "min lane wrong at " + std::to_string(i);
      }
      if (std::memcmp(buffer.data() + 16, typed.data(), typed.size() * 4) != 0) return "sum lane differs from the typed allreduce";
      return "";
    });
    CHECK(errors == std::vector<std::string>(static_cast<size_t>(size)));
  }
}

namespace {

hvd::Status arenaSum(hvd::backends::tcp::HostArena& arena, hc::Transport& ring, std::vector<float>& v) {
  return hvd::backends::tcp::hostAllreduce(
      arena, static_cast<hvd::backends::tcp::TcpTransport&>(ring), std::as_writable_bytes(std::span(v)),
      [&](std::byte* dst, const std::byte* src, hc::Operands order) {
        hc::reduceInto(dst, src, v.size(), DataType::kFloat32, ReduceOp::kSum, order);
      });
}

}  // namespace

TEST_CASE("an allreduce through the host arena gives every rank the bits recursive doubling gives over the links", "[mp][collectives]") {
  for (int size = 1; size <= 8; ++size) {
    INFO("np " << size);
    auto board = hvd::backends::tcp::HostBoard::inProcess(hvd::backends::tcp::HostArena::bytesFor(size));
    auto errors = onRing(size, [&](int rank, hc::Transport& ring) -> std::string {
      hvd::backends::tcp::HostArena arena(board->arena(), size, rank);
      std::mt19937 rng(static_cast<unsigned>(rank * 17 + 3));
      std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
      for (int call = 0; call < 20; ++call) {
        std::vector<float> linked(1 + static_cast<size_t>(call) * 37);
        for (float& f : linked) f = dist(rng);
        std::vector<float> shared = linked;
        auto s = hc::recursiveDoublingAllreduce(ring, linked.data(), linked.size(), DataType::kFloat32, ReduceOp::kSum);
        if (!s.isOk()) return s.message();
        if (auto a = arenaSum(arena, ring, shared); !a.isOk()) return a.message();
        if (std::memcmp(linked.data(), shared.data(), linked.size() * 4) != 0) return "call " + std::to_string(call) + " differs";
      }
      return "";
    });
    CHECK(errors == std::vector<std::string>(static_cast<size_t>(size)));
  }
}

TEST_CASE("when a rank dies while the others wait in the host arena they fail at once naming it and stay failed", "[mp][collectives]") {
  const auto timeout = 5000ms;
  auto board = hvd::backends::tcp::HostBoard::inProcess(hvd::backends::tcp::HostArena::bytesFor(4));
  std::vector<std::chrono::milliseconds> took(4);
  std::vector<std::string> second(4);
  auto errors = onRing(4, [&](int rank, hc::Transport& ring) -> std::string {
    hvd::backends::tcp::HostArena arena(board->arena(), 4, rank);
    std::vector<float> v(8, 1.0f);
    for (int i = 0; i < 1000; ++i) {
      if (rank == 2 && i == 20) {
        static_cast<hvd::backends::tcp::TcpTransport&>(ring).abortForTest();  // as if the process had crashed
        return "aborted";
      }
      auto start = std::chrono::steady_clock::now();
      if (auto s = arenaSum(arena, ring, v); !s.isOk()) {
        took[static_cast<size_t>(rank)] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        second[static_cast<size_t>(rank)] = arenaSum(arena, ring, v).message();
        return s.message();
      }
      v.assign(8, 1.0f);
    }
    return "no error";
  }, timeout);
  for (int r : {0, 1, 3}) {
    INFO("rank " << r << ": " << errors[static_cast<size_t>(r)]);
    CHECK(errors[static_cast<size_t>(r)].rfind("rank 2 ", 0) == 0);
    CHECK(errors[static_cast<size_t>(r)].find("closed its connection") != std::string::npos);
    CHECK(took[static_cast<size_t>(r)] < timeout / 5);
    CHECK(second[static_cast<size_t>(r)] == errors[static_cast<size_t>(r)]);
  }
}

TEST_CASE("ranks waiting in the host arena for one that never comes time out naming it", "[mp][collectives]") {
  const auto timeout = 300ms;
  auto board = hvd::backends::tcp::HostBoard::inProcess(hvd::backends::tcp::HostArena::bytesFor(3));
  auto errors = onRing(3, [&](int rank, hc::Transport& ring) -> std::string {
    hvd::backends::tcp::HostArena arena(board->arena(), 3, rank);
    std::vector<float> v(4, 1.0f);
    if (rank == 1) {
      std::this_thread::sleep_for(4 * timeout);  // keeps its links open meanwhile
      return "late";
    }
    return arenaSum(arena, ring, v).message();
  }, timeout);
  // The first to time out closes its links, and the other may see that before its own
  // deadline (as over the links): one of them names rank 1, the other rank 1 or the first.
  const std::string late = "rank 1 did not join the collective within 0.30 s";
  INFO(errors[0] << " / " << errors[2]);
  CHECK((errors[0] == late || errors[2] == late));
  for (int r : {0, 2}) {
    CHECK((errors[static_cast<size_t>(r)] == late ||
           errors[static_cast<size_t>(r)].rfind("rank " + std::to_string(2 - r) + " (", 0) == 0));
  }
}

TEST_CASE("ring listeners bind the address a rank advertises when it is an IPv4 literal, else every interface", "[unit]") {
  CHECK(hvd::backends::tcp::listenAddressFor("127.0.0.1") == "127.0.0.1");
  CHECK(hvd::backends::tcp::listenAddressFor("10.1.2.3") == "10.1.2.3");
  CHECK(hvd::backends::tcp::listenAddressFor("node07") == "0.0.0.0");
  CHECK(hvd::backends::tcp::listenAddressFor("") == "0.0.0.0");
}

TEST_CASE("a silent connection to a ring listener during set-up neither stalls it nor fails the job", "[mp][collectives]") {
  MemoryStore store;
  std::atomic<bool> intruderIn{false};
  hvd::Socket intruder;
  std::thread sneak([&] {
    auto address = store.get("ring/1", 10s);
    if (!address) return;
    size_t colon = address->rfind(':');
    auto s = hvd::Socket::connect(address->substr(0, colon), std::atoi(address->c_str() + colon + 1),
                                  hvd::deadlineIn(5s));
    if (s) intruder = std::move(*s);  // connected, and says nothing
    intruderIn = true;
  });
  std::vector<std::string> errors(2);
  auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      if (r == 0) {
        while (!intruderIn) std::this_thread::sleep_for(1ms);
      }
      hvd::backends::tcp::TcpTransportOptions options;
      options.secret = "test-secret";
      options.timeout = 10s;
      auto ring = hvd::backends::tcp::TcpTransport::connect(r, 2, store, options);
      if (!ring) errors[static_cast<size_t>(r)] = ring.status().message();
    });
  }
  for (auto& t : ranks) t.join();
  sneak.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(intruder.valid());
  CHECK(errors == std::vector<std::string>(2));
  CHECK(seconds < 5);  // the old loop waited out the whole 10 s for the intruder's hello
}

TEST_CASE("a receive whose bytes keep coming is not timed out however long it takes in all", "[mp][collectives]") {
  useSharedMemory = GENERATE(true, false);
  INFO("shared memory " << useSharedMemory);
  // Rank 1 sends 8 pieces 150 ms apart, 1.2 s in all, into one receive of rank 0's with a
  // 400 ms timeout: a huge tensor over a slow link, whose bytes never stop for that long.
  const auto timeout = 400ms;
  constexpr size_t kPiece = 16 * 1024, kPieces = 8;
  auto errors = onRing(2, [&](int rank, hc::Transport& ring) -> std::string {
    if (rank == 1) {
      std::vector<std::byte> piece(kPiece, std::byte{7});
      for (size_t i = 0; i < kPieces; ++i) {
        std::this_thread::sleep_for(150ms);
        if (auto s = ring.exchangeWith(0, piece, 0, {}); !s.isOk()) return s.message();
      }
      return "";
    }
    std::vector<std::byte> all(kPiece * kPieces);
    if (auto s = ring.exchangeWith(1, {}, 1, all); !s.isOk()) return s.message();
    return std::all_of(all.begin(), all.end(), [](std::byte b) { return b == std::byte{7}; }) ? "" : "wrong bytes";
  }, timeout);
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}
