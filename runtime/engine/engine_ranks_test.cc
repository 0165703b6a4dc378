// runtime/engine/engine_ranks_test.cc: the engine with ranks as threads, each a whole
// Runtime over the real TCP/shared-memory backend (Catch2 assertions on the main thread
// only): fused and unfused results against a serial computation, submission in different
// orders, mismatches, duplicate names, concurrent submitters, a dead peer and shutdown.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <regex>
#include <thread>

#include "collectives/reduce.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/core/runtime.h"
#include "tests/support/memory_store.h"
#include "tests/support/reduce_cases.h"
#include "tests/support/serial_adasum.h"
#include "tests/support/serial_reduce.h"

using namespace std::chrono_literals;
using hvd::DataType;
using hvd::ReduceOp;
using hvd::Status;
using hvd::engine::Engine;
using hvd::engine::OpKind;
using hvd::engine::Spec;
using hvd::test::checkable;
using hvd::test::expected;
using hvd::test::input;

namespace {

hvd::EnvSnapshot environment(bool sharedMemory) {
  auto env = hvd::EnvSnapshot::read([&](const char* name) -> const char* {
    if (std::string(name) == "HVD_SHARED_MEMORY") return sharedMemory ? "1" : "0";
    return nullptr;
  });
  return *env;
}

// Runs body(rank, engine) on `size` threads, each with its own Runtime; returns each rank's
// failure message ("" when it succeeded). Every runtime shuts down after its body.
// `adjust` may replace a rank's backends before its engine starts (failure injection).
using Backends = std::vector<std::unique_ptr<hvd::backends::CollectiveBackend>>;
std::vector<std::string> onRanks(int size, hvd::engine::EngineOptions options,
                                 const std::function<std::string(int, Engine&)>& body, bool sharedMemory = true,
                                 std::chrono::milliseconds timeout = 10s,
                                 const std::function<void(int, Backends&)>& adjust = nullptr) {
  hvd::test::MemoryStore store;
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto env = environment(sharedMemory);
      hvd::backends::BackendSetup setup;
      setup.rank = r, setup.size = size, setup.localRank = r, setup.localSize = size;
      setup.store = &store;
      setup.secret = "engine-test";
      setup.timeout = timeout;
      setup.env = &env;
      auto backends = hvd::backends::openBackends(setup);
      if (!backends) {
        errors[static_cast<size_t>(r)] = "open: " + backends.status().message();
        return;
      }
      if (adjust) adjust(r, *backends);
      hvd::bootstrap::Identity id{r, size, r, size, 0, 1};
      auto runtime = hvd::Runtime::create(id, std::move(*backends), options);
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

struct Case {
  std::string name;
  DataType type;
  ReduceOp op;
  size_t count;
};

// Every type and op at sizes from 0 up, all submitted before any is waited for, so that
// they are ready in one cycle and fuse.
std::vector<Case> everyCase() {
  std::vector<Case> cases;
  const size_t sizes[] = {0, 1, 3, 17, 1000, 4099};
  for (int t = 0; t < hvd::kDataTypeCount; ++t) {
    for (int o = 0; o < hvd::kElementwiseReduceOpCount; ++o) {
      auto type = static_cast<DataType>(t);
      auto op = static_cast<ReduceOp>(o);
      if (!checkable(type, op)) continue;
      for (size_t n : sizes) {
        cases.push_back({std::string(hvd::dataTypeName(type)) + "." + std::string(hvd::reduceOpName(op)) + "." +
                             std::to_string(n),
                         type, op, n});
      }
    }
  }
  return cases;
}

std::string runEveryCase(int rank, int size, Engine& engine, std::vector<std::vector<std::byte>>* results) {
  auto cases = everyCase();
  std::vector<std::vector<std::byte>> in, out;
  std::vector<hvd::engine::HandleId> handles;
  for (const auto& c : cases) {
    in.push_back(input(c.type, rank, c.count));
    out.emplace_back(in.back().size());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    auto h = engine.submit({c.name, Spec{OpKind::kAllreduce, c.type, c.op, 0, c.count, hvd::Device::kCpu},
                            in[i].data(), out[i].data()});
    if (!h) return "submit " + c.name + ": " + h.status().message();
    handles.push_back(*h);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (auto s = engine.wait(handles[i]); !s.isOk()) return c.name + ": " + s.message();
    if (out[i] != expected(c.type, c.op, size, c.count)) return c.name + ": wrong result on rank " + std::to_string(rank);
  }
  if (results) *results = std::move(out);
  return "";
}

}  // namespace

TEST_CASE("every type and op at every size, fused and unfused, equals the serial computation on 1 to 8 ranks", "[mp][engine]") {
  for (int size : {1, 2, 3, 4, 5, 8}) {
    for (std::uint64_t threshold : {std::uint64_t{0}, std::uint64_t{64} << 20, std::uint64_t{4096}}) {
      hvd::engine::EngineOptions options;
      options.fusionThresholdBytes = threshold;
      INFO("np " << size << " fusion threshold " << threshold);
      auto errors = onRanks(size, options, [&](int rank, Engine& e) { return runEveryCase(rank, size, e, nullptr); });
      CHECK(errors == none(size));
    }
  }
}

TEST_CASE("blocking allreduces repeated in one shape ride in the control exchange and stay right for every type and op", "[mp][engine]") {
  for (int size : {2, 3, 5}) {
    INFO("np " << size);
    auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
      for (const auto& c : everyCase()) {
        if (c.count > 1000) continue;  // riders are small
        for (int repeat = 0; repeat < 3; ++repeat) {  // the second and third ride
          auto in = input(c.type, rank, c.count);
          std::vector<std::byte> out(in.size());
          auto h = e.submit({"", Spec{OpKind::kAllreduce, c.type, c.op, 0, c.count, hvd::Device::kCpu}, in.data(), out.data()});
          if (!h) return h.status().message();
          if (auto s = e.wait(*h); !s.isOk()) return c.name + ": " + s.message();
          if (out != expected(c.type, c.op, size, c.count)) return c.name + " repeat " + std::to_string(repeat) + ": wrong";
        }
      }
      return "";
    });
    CHECK(errors == none(size));
  }
}

TEST_CASE("the same checks pass over TCP alone, without shared memory", "[mp][engine]") {
  for (int size : {2, 3, 4}) {
    INFO("np " << size);
    auto errors = onRanks(size, {}, [&](int rank, Engine& e) { return runEveryCase(rank, size, e, nullptr); }, false);
    CHECK(errors == none(size));
  }
}

TEST_CASE("random floats reduce to the same bits on every rank, fused or not", "[mp][engine]") {
  const int size = 4;
  std::vector<std::vector<std::byte>> fused(size), unfused(size);
  for (auto* results : {&fused, &unfused}) {
    hvd::engine::EngineOptions options;
    options.fusionThresholdBytes = results == &fused ? 64u << 20 : 0;
    auto errors = onRanks(size, options, [&](int rank, Engine& e) -> std::string {
      std::mt19937 rng(static_cast<unsigned>(rank));
      std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
      std::vector<std::vector<float>> in(50), out(50);
      std::vector<hvd::engine::HandleId> handles;
      for (int t = 0; t < 50; ++t) {
        in[t].resize(static_cast<size_t>(t * 7 + 1));
        for (float& x : in[t]) x = dist(rng);
        out[t].resize(in[t].size());
        auto h = e.submit({"t" + std::to_string(t), Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, in[t].size(),
                                                        hvd::Device::kCpu},
                           in[t].data(), out[t].data()});
        if (!h) return h.status().message();
        handles.push_back(*h);
      }
      auto& mine = (*results)[static_cast<size_t>(rank)];
      for (int t = 0; t < 50; ++t) {
        if (auto s = e.wait(handles[static_cast<size_t>(t)]); !s.isOk()) return s.message();
        const auto* p = reinterpret_cast<const std::byte*>(out[t].data());
        mine.insert(mine.end(), p, p + out[t].size() * sizeof(float));
      }
      return "";
    });
    REQUIRE(errors == none(size));
  }
  for (int r = 1; r < size; ++r) CHECK(fused[static_cast<size_t>(r)] == fused[0]);
  for (int r = 0; r < size; ++r) CHECK(unfused[static_cast<size_t>(r)] == fused[0]);
}

TEST_CASE("200 names submitted in a different order on each of 4 ranks all complete correctly", "[mp][engine]") {
  const int size = 4;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    std::vector<int> order(200);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(rank + 1)));
    std::vector<std::vector<std::int64_t>> data(200);
    std::vector<hvd::engine::HandleId> handles(200);
    for (int k : order) {
      data[static_cast<size_t>(k)].assign(static_cast<size_t>(k % 9 + 1), rank + k);
      auto& d = data[static_cast<size_t>(k)];
      auto h = e.submit({"grad." + std::to_string(k), Spec{OpKind::kAllreduce, DataType::kInt64, ReduceOp::kSum, 0, d.size(),
                                                          hvd::Device::kCpu},
                         d.data(), d.data()});
      if (!h) return h.status().message();
      handles[static_cast<size_t>(k)] = *h;
      if (k % 17 == 0) std::this_thread::sleep_for(1ms);  // spread them over several cycles
    }
    for (int k : order) {
      if (auto s = e.wait(handles[static_cast<size_t>(k)]); !s.isOk()) return "grad." + std::to_string(k) + ": " + s.message();
      std::int64_t want = 0 + 1 + 2 + 3 + 4 * k;
      for (auto v : data[static_cast<size_t>(k)]) {
        if (v != want) return "grad." + std::to_string(k) + " = " + std::to_string(v) + ", expected " + std::to_string(want);
      }
    }
    return "";
  });
  CHECK(errors == none(size));
}

TEST_CASE("the same names every step hit the cache, and a changed shape is renegotiated", "[mp][engine]") {
  const int size = 3;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    for (int step = 0; step < 20; ++step) {
      size_t n = step < 10 ? 5 : 6;  // the shape changes at step 10
      std::vector<float> a(n, static_cast<float>(rank)), b(n, 1.0f);
      auto ha = e.submit({"a", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, n, hvd::Device::kCpu}, a.data(), a.data()});
      auto hb = e.submit({"b", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kMax, 0, n, hvd::Device::kCpu}, b.data(), b.data()});
      if (!ha || !hb) return "submit failed";
      if (auto s = e.wait(*ha); !s.isOk()) return s.message();
      if (auto s = e.wait(*hb); !s.isOk()) return s.message();
      if (a[n - 1] != 3.0f || b[0] != 1.0f) return "step " + std::to_string(step) + ": wrong result";
    }
    return "";
  });
  CHECK(errors == none(size));
}

TEST_CASE("a tensor submitted with a different count, type or op fails on every rank naming it and the ranks", "[mp][engine]") {
  const int size = 3;
  std::vector<std::string> messages(size);
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    std::vector<float> data(8, 1.0f);
    Spec good{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 8, hvd::Device::kCpu};
    Spec count = good, type = good, op = good;
    count.count = 7;
    type.type = DataType::kInt32;
    op.op = ReduceOp::kMax;
    std::vector<std::pair<std::string, Spec>> bad{{"count", count}, {"type", type}, {"op", op}};
    std::string seen;
    for (const auto& [name, spec] : bad) {
      auto h = e.submit({name, rank == 1 ? spec : good, data.data(), data.data()});
      if (!h) return h.status().message();
      auto s = e.wait(*h);
      if (s.isOk()) return name + ": a mismatch completed";
      seen += s.message() + "\n";
    }
    // The engine is still usable afterwards.
    auto h = e.submit({"after", good, data.data(), data.data()});
    if (!h || !e.wait(*h).isOk() || data[0] != 3.0f) return "a correct request after the mismatches failed";
    messages[static_cast<size_t>(rank)] = seen;
    return "";
  });
  REQUIRE(errors == none(size));
  for (int r = 0; r < size; ++r) {
    INFO("rank " << r << ": " << messages[static_cast<size_t>(r)]);
    CHECK(messages[static_cast<size_t>(r)] == messages[0]);
    CHECK(messages[static_cast<size_t>(r)].find("tensor 'count' was submitted differently by different ranks: ranks 0, 2 asked for "
                                                "allreduce of 8 float32 (sum) but rank 1 asked for allreduce of 7 float32 (sum)") !=
          std::string::npos);
    CHECK(messages[static_cast<size_t>(r)].find("rank 1 asked for allreduce of 8 int32 (sum)") != std::string::npos);
    CHECK(messages[static_cast<size_t>(r)].find("rank 1 asked for allreduce of 8 float32 (max)") != std::string::npos);
  }
}

TEST_CASE("unnamed requests made in a different order fail on every rank with each rank's description", "[mp][engine]") {
  const int size = 2;
  std::vector<std::string> messages(size);
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    std::vector<float> data(4, 1.0f);
    Spec a{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu};
    Spec b{OpKind::kBroadcast, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu};
    auto h = e.submit({"", rank == 0 ? a : b, data.data(), data.data()});
    if (!h) return h.status().message();
    messages[static_cast<size_t>(rank)] = e.wait(*h).message();
    return "";
  });
  REQUIRE(errors == none(size));
  CHECK(messages[0] == messages[1]);
  CHECK(messages[0] == "tensor 'unnamed collective #1' was submitted differently by different ranks: rank 0 asked for "
                       "allreduce of 4 float32 (sum) but rank 1 asked for broadcast of 4 float32 from root 0");
}

TEST_CASE("a name submitted again before it finished is refused at once, and free again after", "[mp][engine]") {
  auto errors = onRanks(2, {}, [&](int rank, Engine& e) -> std::string {
    float x = 1, y = 1;
    Spec s{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, hvd::Device::kCpu};
    auto first = e.submit({"w", s, &x, &x});
    if (!first) return first.status().message();
    auto second = e.submit({"w", s, &y, &y});
    if (second) return "the duplicate was accepted";
    if (second.status().message() != "tensor 'w' was submitted again before its first submission finished") {
      return "unexpected: " + second.status().message();
    }
    if (!e.wait(*first).isOk() || x != 2) return "the first failed";
    auto third = e.submit({"w", s, &y, &y});
    if (!third || !e.wait(*third).isOk() || y != 2) return "the name was not free again";
    if (e.wait(*third).isOk()) return "a handle could be waited for twice";
    (void)rank;
    return "";
  });
  CHECK(errors == none(2));
}

TEST_CASE("an unknown element type or reduction and an average of bools are refused at submission, naming them",
          "[mp][engine]") {
  // The C API hands its enums over as integers: type 42 once indexed past every table.
  auto errors = onRanks(1, {}, [&](int, Engine& e) -> std::string {
    std::uint8_t x = 1;
    auto refusal = [&](DataType type, ReduceOp op) -> std::string {
      auto h = e.submit({"", Spec{OpKind::kAllreduce, type, op, 0, 1, hvd::Device::kCpu, {}}, &x, &x});
      if (h) return "accepted";
      return std::string(hvd::errcName(h.status().code())) + ": " + h.status().message() + " | " + h.status().hint();
    };
    std::string got = refusal(static_cast<DataType>(42), ReduceOp::kSum);
    if (got != "invalid argument: element type 42 is not one hvd knows (0 to 10, hvd_c.h) | ") return got;
    got = refusal(DataType::kUInt8, static_cast<ReduceOp>(-1));
    if (got != "invalid argument: reduction -1 is not one hvd knows (0 to 5, hvd_c.h) | ") return got;
    got = refusal(DataType::kBool, ReduceOp::kAverage);
    if (got != "invalid argument: allreduce: an average of bool tensors is no bool | use sum or max for 'any rank', "
               "min or product for 'every rank', or cast to a number to average") {
      return got;
    }
    return "";
  });
  CHECK(errors == none(1));
}

TEST_CASE("Adasum requests submitted together fuse and still combine each tensor on its own over 1 to 5 ranks",
          "[mp][engine]") {
  // Tensors of different lengths and directions, so each has its own coefficients: a fused
  // buffer combined as one tensor would give every one of them other values.
  const std::vector<size_t> counts{7, 1, 0, 130, 33};
  auto value = [](int rank, size_t tensor, size_t i) {
    return std::cos(0.7 * static_cast<double>(i) * (tensor + 1) + rank) * (1.0 + static_cast<double>(tensor)) +
           0.3 * rank;
  };
  for (int size = 1; size <= 5; ++size) {
    INFO("size " << size);
    std::vector<std::vector<std::vector<float>>> results(static_cast<size_t>(size));
    auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
      std::vector<std::vector<float>> data;
      std::vector<hvd::engine::HandleId> handles;
      for (size_t t = 0; t < counts.size(); ++t) {
        data.emplace_back(counts[t]);
        for (size_t i = 0; i < counts[t]; ++i) data[t][i] = static_cast<float>(value(rank, t, i));
      }
      for (size_t t = 0; t < counts.size(); ++t) {
        auto h = e.submit({"adasum." + std::to_string(t),
                           Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kAdasum, 0, counts[t],
                                hvd::Device::kCpu, {}},
                           data[t].data(), data[t].data()});
        if (!h) return h.status().message();
        handles.push_back(*h);
      }
      for (auto h : handles) {
        if (auto s = e.wait(h); !s.isOk()) return s.message();
      }
      results[static_cast<size_t>(rank)] = data;
      return "";
    });
    REQUIRE(errors == none(size));
    for (size_t t = 0; t < counts.size(); ++t) {
      std::vector<std::vector<double>> leaves(static_cast<size_t>(size));
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < counts[t]; ++i) {
          leaves[static_cast<size_t>(r)].push_back(static_cast<float>(value(r, t, i)));
        }
      }
      std::vector<double> expected = hvd::test::adasumTree(leaves);
      for (int r = 0; r < size; ++r) CHECK(results[static_cast<size_t>(r)][t] == results[0][t]);
      for (size_t i = 0; i < counts[t]; ++i) {
        INFO("tensor " << t << " element " << i);
        CHECK(results[0][t][i] == Approx(expected[i]).epsilon(1e-5).margin(1e-6));
      }
    }
  }
}

TEST_CASE("Adasum on integers or in a reducescatter is refused at submission naming what it takes", "[mp][engine]") {
  auto errors = onRanks(2, {}, [&](int, Engine& e) -> std::string {
    std::int32_t x[2] = {1, 2};
    auto refusal = [&](OpKind kind, DataType type) -> std::string {
      Spec spec{kind, type, ReduceOp::kAdasum, 0, 2, hvd::Device::kCpu, {}};
      spec.rows.elements = 1;
      auto h = e.submit({"", spec, x, x, sizeof x / 2});
      if (h) return "accepted";
      return std::string(hvd::errcName(h.status().code())) + ": " + h.status().message() + " | " + h.status().hint();
    };
    std::string got = refusal(OpKind::kAllreduce, DataType::kInt32);
    if (got != "invalid argument: Adasum combines float16, bfloat16, float32 and float64 tensors, not int32 | cast "
               "the tensor to a floating-point type, or use sum or average") {
      return got;
    }
    got = refusal(OpKind::kReducescatter, DataType::kFloat32);
    if (got.find("invalid argument: reducescatter") != 0 ||
        got.find("only an allreduce takes Adasum") == std::string::npos) {
      return got;
    }
    // Later requests still run: nothing reached the backend.
    float y = 1;
    auto h =
        e.submit({"", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 1, hvd::Device::kCpu, {}}, &y, &y});
    if (!h) return h.status().message();
    if (auto s = e.wait(*h); !s.isOk()) return s.message();
    return y == 2 ? "" : "sum after the refusals: " + std::to_string(y);
  });
  CHECK(errors == none(2));
}

TEST_CASE("broadcast from every root and allgather of uneven shares go through the engine", "[mp][engine]") {
  const int size = 3;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    for (int root = 0; root < size; ++root) {
      std::vector<std::int32_t> data(5, rank == root ? 100 + root : -1);
      auto h = e.submit({"b" + std::to_string(root), Spec{OpKind::kBroadcast, DataType::kInt32, ReduceOp::kSum, root, 5, hvd::Device::kCpu},
                         data.data(), data.data()});
      if (!h || !e.wait(*h).isOk()) return "broadcast failed";
      if (data != std::vector<std::int32_t>(5, 100 + root)) return "broadcast from " + std::to_string(root) + " wrong";
    }
    for (bool named : {true, false}) {
      std::vector<std::int32_t> mine(static_cast<size_t>(rank), rank);  // rank 0 gives nothing
      auto h = e.submit({named ? "g" : "", Spec{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, mine.size(), hvd::Device::kCpu},
                         mine.data(), nullptr});
      if (!h) return h.status().message();
      auto g = e.waitGathered(*h);
      if (!g) return g.status().message();
      if (g->counts != std::vector<std::uint64_t>{0, 1, 2}) return "allgather counts wrong";
      std::vector<std::int32_t> all(g->bytes.size() / 4);
      std::memcpy(all.data(), g->bytes.data(), g->bytes.size());
      if (all != std::vector<std::int32_t>{1, 2, 2}) return "allgather data wrong";
    }
    auto b = e.submit({"", Spec{OpKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, hvd::Device::kCpu}, nullptr, nullptr});
    if (!b || !e.wait(*b).isOk()) return "barrier failed";
    return "";
  });
  CHECK(errors == none(size));
}

TEST_CASE("eight threads per rank submitting and waiting concurrently all get correct results", "[mp][engine]") {
  const int size = 3, threads = 8, perThread = 40;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    std::vector<std::string> failures(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int i = 0; i < perThread; ++i) {
          std::vector<double> v(static_cast<size_t>(i % 5 + 1), rank + 1.0);
          auto h = e.submit({"t" + std::to_string(t) + "." + std::to_string(i),
                             Spec{OpKind::kAllreduce, DataType::kFloat64, ReduceOp::kSum, 0, v.size(), hvd::Device::kCpu}, v.data(), v.data()});
          if (!h) return void(failures[static_cast<size_t>(t)] = h.status().message());
          if (i % 3 == 0) {
            while (true) {
              auto done = e.poll(*h);
              if (!done) return void(failures[static_cast<size_t>(t)] = done.status().message());
              if (*done) break;
              std::this_thread::yield();
            }
          }
          if (auto s = e.wait(*h); !s.isOk()) return void(failures[static_cast<size_t>(t)] = s.message());
          if (v[0] != 6.0) return void(failures[static_cast<size_t>(t)] = "wrong sum");
        }
      });
    }
    for (auto& w : workers) w.join();
    for (const auto& f : failures) {
      if (!f.empty()) return f;
    }
    return "";
  });
  CHECK(errors == none(size));
}

// A backend that dies on request, as a crashed process's would: its connections close
// (the real backend is destroyed on the engine's thread) and every call fails.
class DyingBackend : public hvd::backends::CollectiveBackend {
 public:
  DyingBackend(std::unique_ptr<CollectiveBackend> inner, std::atomic<bool>& die) : inner_(std::move(inner)), die_(die) {}
  std::string_view name() const override { return "dying"; }
  bool supports(hvd::Device d) const override { return d == hvd::Device::kCpu; }
  hvd::Status allreduce(const hvd::backends::TensorRef& t, ReduceOp op) override {
    return alive() ? inner_->allreduce(t, op) : dead();
  }
  hvd::Status broadcast(const hvd::backends::TensorRef& t, int root) override { return alive() ? inner_->broadcast(t, root) : dead(); }
  hvd::Status allgatherv(const hvd::backends::TensorRef& t, std::span<const size_t> b, void* out) override {
    return alive() ? inner_->allgatherv(t, b, out) : dead();
  }
  hvd::Status barrier() override { return alive() ? inner_->barrier() : dead(); }
  hvd::Status agree(std::span<std::uint8_t> bytes, ControlWait wait) override {
    return alive() ? inner_->agree(bytes, wait) : dead();
  }

 private:
  bool alive() {
    if (die_.load()) inner_.reset();
    return inner_ != nullptr;
  }
  static hvd::Status dead() { return hvd::Status(hvd::Errc::kRemote, "this rank died"); }
  std::unique_ptr<CollectiveBackend> inner_;
  std::atomic<bool>& die_;
};

// Collects what onPeerGone was called with, from any rank's thread.
struct GoneReports {
  std::mutex mutex;
  std::vector<int> peers;
  hvd::engine::EngineOptions options() {
    hvd::engine::EngineOptions o;
    o.onPeerGone = [this](int peer) {
      std::lock_guard<std::mutex> lock(mutex);
      peers.push_back(peer);
    };
    return o;
  }
};

TEST_CASE("a rank that dies fails every pending handle on the survivors, naming the peer, well within the timeout", "[mp][engine]") {
  const int size = 3;
  std::vector<std::string> messages(size);
  std::atomic<bool> die{false};
  GoneReports gone;
  auto started = std::chrono::steady_clock::now();
  auto errors = onRanks(
      size, gone.options(),
      [&](int r, Engine& e) -> std::string {
        std::vector<float> v(4, 1.0f);
        std::vector<hvd::engine::HandleId> handles;
        for (int i = 0; i < 5; ++i) {
          // Rank 2 submits only p0, so p1-p4 stay pending on the others when it dies.
          if (r == 2 && i > 0) break;
          auto h = e.submit({"p" + std::to_string(i), Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu},
                             v.data(), v.data()});
          if (h) handles.push_back(*h);
        }
        std::string seen;
        for (size_t i = 0; i < handles.size(); ++i) {
          auto s = e.wait(handles[i]);
          if (i == 0 && !s.isOk()) seen = "p0 failed: " + s.message();
          if (i == 0 && r == 2) die = true;
          if (i > 0) seen += s.isOk() ? "completed without rank 2;" : s.message() + ";";
        }
        auto after = e.submit({"later", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu}, v.data(), v.data()});
        if (after) seen += "accepted work after the failure;";
        messages[static_cast<size_t>(r)] = seen;
        return "";
      },
      true, 20s,
      [&](int r, Backends& backends) {
        if (r == 2) backends[0] = std::make_unique<DyingBackend>(std::move(backends[0]), die);
      });
  CHECK(errors == none(size));
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  // A survivor that loses its link fails its own links too, so the other may name it
  // rather than rank 2; at least one names rank 2.
  int naming2 = 0;
  for (int r = 0; r < 2; ++r) {
    INFO(messages[static_cast<size_t>(r)]);
    CHECK(std::regex_search(messages[static_cast<size_t>(r)], std::regex("^(rank [0-2] \\([^)]*\\) closed its connection[^;]*;){4}$")));
    naming2 += messages[static_cast<size_t>(r)].rfind("rank 2 ", 0) == 0;
  }
  CHECK(naming2 >= 1);
  // Each survivor tells its launcher once whose going failed it: the rank its message names.
  std::vector<int> named;
  for (int r = 0; r < 2; ++r) named.push_back(messages[static_cast<size_t>(r)][5] - '0');  // "rank N ..."
  std::sort(named.begin(), named.end());
  std::sort(gone.peers.begin(), gone.peers.end());
  CHECK(gone.peers == named);
}

TEST_CASE("a rank that shuts down with requests pending elsewhere fails them there, saying which rank it was", "[mp][engine]") {
  const int size = 2;
  std::string message;
  GoneReports gone;
  auto errors = onRanks(size, gone.options(), [&](int rank, Engine& e) -> std::string {
    if (rank == 0) {
      std::vector<float> v(4, 1.0f);
      auto h = e.submit({"only-rank-0", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu},
                         v.data(), v.data()});
      if (!h) return h.status().message();
      message = e.wait(*h).message();
      return "";
    }
    std::this_thread::sleep_for(50ms);
    e.shutdown();
    return "";
  });
  CHECK(errors == none(size));
  CHECK(message == "rank 1 shut hvd down (hvd.shutdown(), or its program ended), so no collective runs after it");
  CHECK(gone.peers == std::vector<int>{1});  // rank 0 tells its launcher; rank 1 failed no one's request
}

TEST_CASE("ranks that shut down one after another at the end of a job tell their launcher of no going", "[mp][engine]") {
  const int size = 3;
  GoneReports gone;
  auto errors = onRanks(size, gone.options(), [&](int rank, Engine& e) -> std::string {
    std::vector<float> v(4, 1.0f);
    auto h = e.submit({"last", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu},
                       v.data(), v.data()});
    if (!h) return h.status().message();
    if (auto s = e.wait(*h); !s.isOk()) return s.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * rank));  // rank 0 shuts down first
    e.shutdown();
    return "";
  });
  CHECK(errors == none(size));
  CHECK(gone.peers.empty());
}

TEST_CASE("a rank whose next request fails because a peer shut down tells its launcher which peer at that request", "[mp][engine]") {
  // Nothing was pending when the peer shut down: the engine stopped quietly, and only the
  // request made after it is a failure the caller sees.
  const int size = 2;
  GoneReports gone;
  std::string message;
  size_t reportsBeforeRequest = 99;
  auto errors = onRanks(size, gone.options(), [&](int rank, Engine& e) -> std::string {
    if (rank == 1) {
      e.shutdown();
      return "";
    }
    std::this_thread::sleep_for(200ms);  // rank 1's shutdown has stopped this engine by now
    {
      std::lock_guard<std::mutex> lock(gone.mutex);
      reportsBeforeRequest = gone.peers.size();
    }
    std::vector<float> v(4, 1.0f);
    auto h = e.submit({"late", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu},
                       v.data(), v.data()});
    message = h ? e.wait(*h).message() : h.status().message();
    return "";
  });
  CHECK(errors == none(size));
  CHECK(message == "rank 1 shut hvd down (hvd.shutdown(), or its program ended), so no collective runs after it");
  CHECK(reportsBeforeRequest == 0);
  CHECK(gone.peers == std::vector<int>{1});
}

namespace {

Spec reduction(std::uint64_t count, ReduceOp op = ReduceOp::kSum) {
  return Spec{OpKind::kAllreduce, DataType::kFloat32, op, 0, count, hvd::Device::kCpu};
}

// Element i of rank r's input: exact in float32, different on every rank.
std::vector<float> ramp(int rank, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(rank * 10 + static_cast<int>(i) + 1);
  return v;
}

// What ranks `from` give under op, element by element (average: the sum over the job's size,
// as Horovod's joined ranks count in it).
std::vector<float> over(const std::vector<int>& from, size_t count, ReduceOp op, int size) {
  std::vector<float> out = ramp(from[0], count);
  for (size_t k = 1; k < from.size(); ++k) {
    std::vector<float> v = ramp(from[k], count);
    for (size_t i = 0; i < count; ++i) {
      if (op == ReduceOp::kSum || op == ReduceOp::kAverage) out[i] += v[i];
      if (op == ReduceOp::kMin) out[i] = std::min(out[i], v[i]);
      if (op == ReduceOp::kMax) out[i] = std::max(out[i], v[i]);
      if (op == ReduceOp::kProduct) out[i] *= v[i];
    }
  }
  if (op == ReduceOp::kAverage) {
    for (float& x : out) x /= static_cast<float>(size);
  }
  return out;
}

// Runs the named and unnamed allreduces of every op, an allgather each way, broadcasts from
// `root` and a barrier, on a rank that has not joined, checking each against `working`
// (with a rank joined, the allgathers and broadcasts must fail).
std::string workAlongsideJoined(Engine& e, int rank, const std::vector<int>& working, int root, int size,
                                const std::string& round) {
  const size_t n = 5;
  std::vector<float> a = ramp(rank, n), b = ramp(rank, 3), c = ramp(rank, 700);
  std::vector<hvd::engine::HandleId> fused;
  for (auto* v : {&a, &b, &c}) {
    std::string name = v == &a ? "a" : v == &b ? "b" : "c" + round;  // "a" and "b" are cached
    auto h = e.submit({name, reduction(v->size()), v->data(), v->data()});
    if (!h) return h.status().message();
    fused.push_back(*h);
  }
  for (auto h : fused) {
    if (Status s = e.wait(h); !s.isOk()) return s.message();
  }
  if (a != over(working, n, ReduceOp::kSum, size) || b != over(working, 3, ReduceOp::kSum, size) ||
      c != over(working, 700, ReduceOp::kSum, size)) {
    return round + ": a fused sum is wrong";
  }
  for (int o = 0; o < hvd::kElementwiseReduceOpCount; ++o) {
    auto op = static_cast<ReduceOp>(o);
    for (bool named : {true, false}) {
      std::vector<float> v = ramp(rank, n);
      auto h = e.submit({named ? "op" + std::to_string(o) : "", reduction(n, op), v.data(), v.data()});
      if (!h) return h.status().message();
      if (Status s = e.wait(*h); !s.isOk()) return s.message();
      if (v != over(working, n, op, size)) {
        return round + ": " + std::string(hvd::reduceOpName(op)) + (named ? " named" : " unnamed") + " is wrong";
      }
    }
  }
  // Blocking calls of one shape in a row ride in the control exchange, a joined rank's
  // rider holding the identity.
  for (int k = 0; k < 4; ++k) {
    std::vector<float> v = ramp(rank, n);
    auto h = e.submit({"", reduction(n, ReduceOp::kAverage), v.data(), v.data(), 0, true});
    if (!h) return h.status().message();
    if (Status s = e.wait(*h); !s.isOk()) return s.message();
    if (v != over(working, n, ReduceOp::kAverage, size)) return round + ": a riding average is wrong";
  }
  for (bool named : {true, false}) {
    std::vector<std::int32_t> mine(static_cast<size_t>(rank), rank);
    Spec g{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, mine.size(), hvd::Device::kCpu};
    auto h = e.submit({named ? "g" : "", g, mine.data(), nullptr});
    if (!h) return h.status().message();
    auto gathered = e.waitGathered(*h);
    std::vector<std::int32_t> data(4, rank == root ? 70 + root : -1);
    Spec bcast{OpKind::kBroadcast, DataType::kInt32, ReduceOp::kSum, root, 4, hvd::Device::kCpu};
    if (working.size() < static_cast<size_t>(size)) {
      // Horovod's rule: beside joined ranks only reductions run; the others fail here.
      if (gathered.isOk() || gathered.status().code() != hvd::Errc::kUnavailable ||
          gathered.status().message().find("only reductions run beside joined ranks") == std::string::npos) {
        return round + ": an allgather beside a joined rank did not fail as unavailable";
      }
      auto bh = e.submit({named ? "bc" : "", bcast, data.data(), data.data()});
      if (!bh) return bh.status().message();
      Status s = e.wait(*bh);
      if (s.code() != hvd::Errc::kUnavailable) return round + ": a broadcast beside a joined rank: " + s.message();
      continue;
    }
    if (!gathered) return gathered.status().message();
    std::vector<std::uint64_t> counts(static_cast<size_t>(size), 0);
    std::vector<std::int32_t> expect;
    for (int r : working) {
      counts[static_cast<size_t>(r)] = static_cast<std::uint64_t>(r);
      expect.insert(expect.end(), static_cast<size_t>(r), r);
    }
    std::vector<std::int32_t> all(gathered->bytes.size() / 4);
    std::memcpy(all.data(), gathered->bytes.data(), gathered->bytes.size());
    if (gathered->counts != counts || all != expect) return round + ": allgather is wrong";
    auto bh = e.submit({named ? "bc" : "", bcast, data.data(), data.data()});
    if (!bh) return bh.status().message();
    if (Status s = e.wait(*bh); !s.isOk()) return s.message();
    if (data != std::vector<std::int32_t>(4, 70 + root)) return round + ": broadcast is wrong";
  }
  auto barrier = e.submit({"", Spec{OpKind::kBarrier, DataType::kUInt8, ReduceOp::kSum, 0, 0, hvd::Device::kCpu}});
  if (!barrier || !e.wait(*barrier).isOk()) return round + ": barrier failed";
  return "";
}

// join(), checking what it returns (-1: any rank).
std::string joinExpecting(Engine& e, int last) {
  auto j = e.submitJoin();
  if (!j) return j.status().message();
  auto lastJoined = e.waitJoin(*j);
  if (!lastJoined) return lastJoined.status().message();
  if (last < 0) return *lastJoined >= 0 ? "" : "join returned " + std::to_string(*lastJoined);  // any rank
  return *lastJoined == last ? "" : "join returned " + std::to_string(*lastJoined);
}

}  // namespace

TEST_CASE("ranks that joined take part in the others' reductions without changing a result, and join returns the last to join",
          "[mp][engine]") {
  const int size = 3;
  for (bool sharedMemory : {true, false}) {
    INFO((sharedMemory ? "shared memory" : "TCP"));
    auto errors = onRanks(
        size, {},
        [&](int rank, Engine& e) -> std::string {
          // Every rank reduces "a" and "b" once, so the later rounds find them cached.
          for (const char* name : {"a", "b"}) {
            std::vector<float> v = ramp(rank, std::string(name) == "a" ? 5 : 3);
            auto h = e.submit({name, reduction(v.size()), v.data(), v.data()});
            if (!h || !e.wait(*h).isOk()) return "warm-up failed";
          }
          // Rank 0 joins at once; rank 1 after a round with ranks 1 and 2; rank 2 last, after
          // a round alone. Every round checks its results against the ranks still working.
          if (rank >= 1) {
            if (auto s = workAlongsideJoined(e, rank, {1, 2}, 2, size, "ranks 1-2"); !s.empty()) return s;
          }
          if (rank == 2) {
            if (auto s = workAlongsideJoined(e, rank, {2}, 2, size, "rank 2"); !s.empty()) return s;
          }
          if (auto s = joinExpecting(e, 2); !s.empty()) return s;
          // After every rank joined the job goes on with all of them, and joins again.
          if (auto s = workAlongsideJoined(e, rank, {0, 1, 2}, 0, size, "all"); !s.empty()) return s;
          if (rank != 1) {
            if (auto s = workAlongsideJoined(e, rank, {0, 2}, 0, size, "ranks 0, 2"); !s.empty()) return s;
          }
          if (rank == 0) {
            if (auto s = workAlongsideJoined(e, rank, {0}, 0, size, "rank 0"); !s.empty()) return s;
          }
          return joinExpecting(e, 0);
        },
        sharedMemory);
    CHECK(errors == none(size));
  }
}

TEST_CASE("a broadcast from a rank that joined fails on every rank that has not, naming the root", "[mp][engine]") {
  const int size = 3;
  std::vector<std::string> messages(size);
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    if (rank != 0) {
      for (bool named : {true, false}) {
        std::vector<std::int32_t> data(4, -1);
        Spec bcast{OpKind::kBroadcast, DataType::kInt32, ReduceOp::kSum, 0, 4, hvd::Device::kCpu};
        auto h = e.submit({named ? "from-0" : "", bcast, data.data(), data.data()});
        if (!h) return h.status().message();
        Status s = e.wait(*h);
        if (s.code() != hvd::Errc::kInvalidUsage) return "broadcast from a joined root: " + s.message();
        messages[static_cast<size_t>(rank)] += s.message() + "\n";
      }
      // Nor does a GPU tensor run: a joined rank has no device buffer to stand in with.
      std::vector<float> onGpu(4);
      Spec gpu = reduction(4);
      gpu.device = hvd::Device::kCuda;
      auto g = e.submit({"on-gpu", gpu, onGpu.data(), onGpu.data()});
      if (!g) return g.status().message();
      Status gs = e.wait(*g);
      if (gs.code() != hvd::Errc::kUnavailable) return "a GPU tensor with a joined rank: " + gs.message();
      messages[static_cast<size_t>(rank)] += gs.message() + "\n";
      // The job goes on: the ranks still working reduce as before.
      std::vector<float> v = ramp(rank, 4);
      auto h = e.submit({"after", reduction(4), v.data(), v.data()});
      if (!h || !e.wait(*h).isOk() || v != over({1, 2}, 4, ReduceOp::kSum, size)) return "allreduce after it failed";
    }
    return joinExpecting(e, -1);
  });
  CHECK(errors == none(size));
  CHECK(messages[1] ==
        "tensor 'from-0': broadcast of 4 int32 from root 0: the root has called join(), so it has nothing to send\n"
        "broadcast of 4 int32 from root 0: the root has called join(), so it has nothing to send\n"
        "tensor 'on-gpu': allreduce of 4 float32 (sum) on the GPU ran while rank 0 had joined; join() takes part "
        "only in CPU tensors' collectives here\n");
  CHECK(messages[2] == messages[1]);
}

TEST_CASE("a request or a second join on a rank whose join is pending is refused, and accepted once every rank joined",
          "[mp][engine]") {
  const int size = 2;
  std::string refused, again;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    std::vector<float> v = ramp(rank, 4);
    if (rank == 0) {
      auto j = e.submitJoin();
      if (!j) return j.status().message();
      auto h = e.submit({"late", reduction(4), v.data(), v.data()});
      if (h) return "a request on a joining rank was accepted";
      refused = h.status().message() + " | " + h.status().hint();
      auto second = e.submitJoin();
      if (second) return "a second join was accepted";
      again = second.status().message();
      auto last = e.waitJoin(*j);
      if (!last || *last != 1) return "join did not return rank 1";
    } else {
      std::this_thread::sleep_for(50ms);  // rank 1 joins last
      if (auto s = joinExpecting(e, 1); !s.empty()) return s;
    }
    auto h = e.submit({"late", reduction(4), v.data(), v.data()});
    if (!h || !e.wait(*h).isOk() || v != over({0, 1}, 4, ReduceOp::kSum, size)) return "allreduce after join failed";
    return "";
  });
  CHECK(errors == none(size));
  CHECK(refused ==
        "allreduce of 4 float32 (sum) 'late' was submitted on a rank whose join() is pending | a rank that called "
        "join() submits nothing until every rank joined and its join() returned");
  CHECK(again == "join() was called again on this rank before the first returned");
}

TEST_CASE("ranks waiting in join name the rank that never joins in the stall warning and shutdown", "[mp][engine]") {
  const int size = 3;
  hvd::engine::EngineOptions options;
  options.stallWarning = 300ms;
  options.stallShutdown = 600ms;
  std::vector<std::string> messages(size);
  auto errors = onRanks(size, options, [&](int rank, Engine& e) -> std::string {
    if (rank == 2) {
      // Still working: its requests run with the joined ranks, so it is not what stalls.
      for (int step = 0; step < 20; ++step) {
        std::vector<float> v = ramp(rank, 4);
        auto h = e.submit({"w", reduction(4), v.data(), v.data()});
        Status s = h ? e.wait(*h) : h.status();  // the stall may stop the engine before or after the submission
        if (!s.isOk()) {
          messages[2] = s.message();
          return "";
        }
        if (v != ramp(rank, 4)) return "the joined ranks changed rank 2's sum";
        std::this_thread::sleep_for(100ms);
      }
      return "rank 2 never heard of the stall";
    }
    auto j = e.submitJoin();
    if (!j) return j.status().message();
    auto last = e.waitJoin(*j);
    if (last) return "join returned though rank 2 never joined";
    messages[static_cast<size_t>(rank)] = last.status().message();
    return "";
  });
  CHECK(errors == none(size));
  for (const auto& m : messages) {
    CHECK_THAT(m, Catch::Matches("collective 'join\\(\\)' stalled: ranks 0, 1 waited [0-9]+ s for rank 2, which never "
                                 "submitted it \\(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=0\\)"));
  }
}

TEST_CASE("a request still pending when its rank joins runs first, with the ranks that never submit it standing in",
          "[mp][engine]") {
  const int size = 3;
  std::vector<float> result;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    if (rank == 0) {
      // Submitted, not waited for, then join: the join waits for it, and it for ranks 1
      // and 2, which join without ever submitting it.
      std::vector<float> v = ramp(rank, 6);
      auto h = e.submit({"only-rank-0", reduction(6, ReduceOp::kMax), v.data(), v.data()});
      if (!h) return h.status().message();
      auto j = e.submitJoin();
      if (!j) return j.status().message();
      if (Status s = e.wait(*h); !s.isOk()) return s.message();
      result = v;
      auto last = e.waitJoin(*j);
      if (!last) return last.status().message();
      return *last == 0 ? "" : "rank 0's join was not the last: " + std::to_string(*last);
    }
    return joinExpecting(e, 0);
  });
  CHECK(errors == none(size));
  CHECK(result == ramp(0, 6));
}

namespace {

Spec scatter(std::uint64_t rows, std::uint64_t perRow, ReduceOp op) {
  Spec s{OpKind::kReducescatter, DataType::kFloat32, op, 0, rows * perRow, hvd::Device::kCpu};
  const std::int64_t trailing[] = {static_cast<std::int64_t>(perRow)};
  s.rows = hvd::engine::rowShapeOf(trailing);
  return s;
}

}  // namespace

TEST_CASE("reducescatter gives each rank its rows of the reduction, split as Horovod splits them, beside a joined rank too",
          "[mp][engine]") {
  const int size = 3;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    for (std::uint64_t rows : {0ull, 1ull, 2ull, 3ull, 7ull, 9ull}) {
      for (int o = 0; o < hvd::kElementwiseReduceOpCount; ++o) {
        const auto op = static_cast<ReduceOp>(o);
        for (bool named : {true, false}) {
          const std::uint64_t perRow = 2;
          std::vector<float> in = ramp(rank, rows * perRow);
          const auto share = hvd::engine::reducescatterShare(rows, rank, size);
          std::vector<float> out(share.rows * perRow, -1.0f);
          auto h = e.submit({named ? "rs" + std::to_string(rows) : "", scatter(rows, perRow, op), in.data(), out.data(),
                             out.size() * sizeof(float)});
          if (!h) return h.status().message();
          if (Status s = e.wait(*h); !s.isOk()) return s.message();
          std::vector<float> all = over({0, 1, 2}, rows * perRow, op, size);
          std::vector<float> mine(all.begin() + static_cast<long>(share.firstRow * perRow),
                                  all.begin() + static_cast<long>((share.firstRow + share.rows) * perRow));
          if (out != mine) return "reducescatter of " + std::to_string(rows) + " rows, " + std::string(hvd::reduceOpName(op)) +
                                  (named ? " named" : " unnamed") + ", is wrong";
        }
      }
    }
    // A wrong output size fails this rank's call at once, not the collective.
    std::vector<float> in(8), out(1);
    auto wrong = e.submit({"rs-wrong", scatter(4, 2, ReduceOp::kSum), in.data(), out.data(), sizeof(float)});
    if (wrong || wrong.status().message().find("'s share is") == std::string::npos) return "a wrong output size was taken";
    // Rank 0 joined: the others' shares hold their sum alone; rank 0's rows still count in the split.
    if (rank == 0) return joinExpecting(e, -1);
    std::vector<float> in2 = ramp(rank, 6), out2(2);
    auto h = e.submit({"rs-joined", scatter(3, 2, ReduceOp::kSum), in2.data(), out2.data(), out2.size() * sizeof(float)});
    if (!h || !e.wait(*h).isOk()) return "reducescatter beside a joined rank failed";
    std::vector<float> sum = over({1, 2}, 6, ReduceOp::kSum, size);
    if (out2 != std::vector<float>(sum.begin() + 2 * rank, sum.begin() + 2 * rank + 2)) return "beside a joined rank: wrong";
    return joinExpecting(e, -1);
  });
  CHECK(errors == none(size));
}

// A backend that passes everything on to the real one, counting the reducescatters and
// alltoalls it runs as such, or hiding that the real one has them (so the engine composes).
class PrimitiveCounter : public hvd::backends::CollectiveBackend {
 public:
  PrimitiveCounter(std::unique_ptr<CollectiveBackend> inner, bool hide, std::atomic<int>& calls)
      : inner_(std::move(inner)), hide_(hide), calls_(calls) {}
  std::string_view name() const override { return inner_->name(); }
  bool supports(hvd::Device d) const override { return inner_->supports(d); }
  hvd::Status allreduce(const hvd::backends::TensorRef& t, ReduceOp op) override { return inner_->allreduce(t, op); }
  hvd::Status broadcast(const hvd::backends::TensorRef& t, int root) override { return inner_->broadcast(t, root); }
  hvd::Status allgatherv(const hvd::backends::TensorRef& t, std::span<const size_t> b, void* out) override {
    return inner_->allgatherv(t, b, out);
  }
  hvd::Status barrier() override { return inner_->barrier(); }
  hvd::Status agree(std::span<std::uint8_t> bytes, ControlWait wait) override { return inner_->agree(bytes, wait); }
  bool hasReducescatter() const override { return !hide_ && inner_->hasReducescatter(); }
  hvd::Status reducescatter(const hvd::backends::TensorRef& t, std::span<const size_t> counts, ReduceOp op,
                            void* out) override {
    ++calls_;
    return inner_->reducescatter(t, counts, op, out);
  }
  bool hasAlltoall() const override { return !hide_ && inner_->hasAlltoall(); }
  hvd::Status alltoallv(const hvd::backends::TensorRef& t, std::span<const size_t> matrix, void* out) override {
    ++calls_;
    return inner_->alltoallv(t, matrix, out);
  }

 private:
  std::unique_ptr<CollectiveBackend> inner_;
  bool hide_;
  std::atomic<int>& calls_;
};

// A backend that cannot reduce int16 (as NCCL cannot), passing everything else on.
class NoInt16 : public PrimitiveCounter {
 public:
  using PrimitiveCounter::PrimitiveCounter;
  hvd::Status canReduce(DataType type, ReduceOp) const override {
    if (type != DataType::kInt16) return hvd::Status::ok();
    return hvd::Status(hvd::Errc::kInvalidUsage, "this backend has no int16");
  }
};

TEST_CASE("a type the backend cannot reduce is refused at submission on every rank and later calls still run",
          "[mp][engine]") {
  const int size = 3;
  std::atomic<int> calls{0};
  auto errors = onRanks(
      size, {},
      [&](int rank, Engine& e) -> std::string {
        std::vector<std::int16_t> shorts(4, 1);
        for (OpKind kind : {OpKind::kAllreduce, OpKind::kReducescatter}) {
          Spec spec{kind, DataType::kInt16, ReduceOp::kSum, 0, 3, hvd::Device::kCpu};
          spec.rows.elements = 1;
          auto refused = e.submit({"", spec, shorts.data(), shorts.data(), kind == OpKind::kAllreduce ? 6u : 2u});
          if (refused || refused.status().message() != "this backend has no int16") return "int16 was taken";
        }
        // Nothing ran, so nothing is poisoned: the next allreduce, int16 of nothing included, runs.
        Spec none{OpKind::kAllreduce, DataType::kInt16, ReduceOp::kSum, 0, 0, hvd::Device::kCpu};
        auto empty = e.submit({"", none, shorts.data(), shorts.data()});
        if (!empty || !e.wait(*empty).isOk()) return "an empty int16 allreduce failed";
        std::vector<float> v(5, static_cast<float>(rank + 1));
        auto h = e.submit({"", Spec{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 5, hvd::Device::kCpu},
                           v.data(), v.data()});
        if (!h) return h.status().message();
        if (Status s = e.wait(*h); !s.isOk()) return s.message();
        return v == std::vector<float>(5, 6.0f) ? "" : "the allreduce after the refusals is wrong";
      },
      true, 10s,
      [&](int, Backends& backends) {
        for (auto& b : backends) b = std::make_unique<NoInt16>(std::move(b), false, calls);
      });
  CHECK(errors == none(size));
}

TEST_CASE("reducescatter and alltoall run on the backend's own primitives where it has them and are composed where not, alike",
          "[mp][engine]") {
  const bool hide = GENERATE(false, true);
  const bool sharedMemory = GENERATE(true, false);
  const int size = GENERATE(3, 4);  // hvd's ring alltoall, its hypercube
  INFO((hide ? "composed" : "the backend's own") << (sharedMemory ? " over shared memory" : " over TCP") << ", "
                                                  << size << " ranks");
  std::atomic<int> calls{0};
  auto errors = onRanks(
      size, {},
      [&](int rank, Engine& e) -> std::string {
        // 7001 rows of 2 floats: past the host arena, so the ring's reduce-scatter runs.
        std::vector<int> everyRank(static_cast<size_t>(size));
        std::iota(everyRank.begin(), everyRank.end(), 0);
        for (std::uint64_t rows : {std::uint64_t{4}, std::uint64_t{7001}}) {
          std::vector<float> in = ramp(rank, rows * 2);
          const auto share = hvd::engine::reducescatterShare(rows, rank, size);
          std::vector<float> out(share.rows * 2, -1.0f);
          auto h = e.submit({"rs", scatter(rows, 2, ReduceOp::kAverage), in.data(), out.data(), out.size() * sizeof(float)});
          if (!h) return h.status().message();
          if (Status s = e.wait(*h); !s.isOk()) return s.message();
          std::vector<float> all = over(everyRank, rows * 2, ReduceOp::kAverage, size);
          if (out != std::vector<float>(all.begin() + static_cast<long>(share.firstRow * 2),
                                        all.begin() + static_cast<long>((share.firstRow + share.rows) * 2))) {
            return "reducescatter of " + std::to_string(rows) + " rows is wrong";
          }
        }
        // Rank k sends rank d 1000 * (k + d) rows of one int64, each 1000 * k + d.
        std::vector<std::uint64_t> splits;
        std::vector<std::int64_t> send;
        for (int d = 0; d < size; ++d) {
          splits.push_back(1000u * static_cast<std::uint64_t>(rank + d));
          send.insert(send.end(), splits.back(), 1000 * rank + d);
        }
        Spec spec{OpKind::kAlltoall, DataType::kInt64, ReduceOp::kSum, 0, send.size(), hvd::Device::kCpu};
        Engine::Submission a{"a2a", spec, send.data()};
        a.splits = splits;
        auto h = e.submit(std::move(a));
        if (!h) return h.status().message();
        auto got = e.waitGathered(*h);
        if (!got) return got.status().message();
        std::vector<std::int64_t> expect;
        for (int k = 0; k < size; ++k) expect.insert(expect.end(), 1000u * static_cast<size_t>(k + rank), 1000 * k + rank);
        std::vector<std::int64_t> received(got->bytes.size() / sizeof(std::int64_t));
        std::memcpy(received.data(), got->bytes.data(), got->bytes.size());
        return received == expect ? "" : "alltoall is wrong";
      },
      sharedMemory, 10s,
      [&](int, Backends& backends) {
        for (auto& b : backends) b = std::make_unique<PrimitiveCounter>(std::move(b), hide, calls);
      });
  CHECK(errors == none(size));
  // Each rank: two reducescatters and one alltoall, or none of them as such.
  CHECK(calls.load() == (hide ? 0 : 3 * size));
}

TEST_CASE("reducescatters submitted together, fused or not, give each rank its rows of each", "[mp][engine]") {
  const bool hide = GENERATE(false, true);           // the backend's reduce-scatter, or an allreduce
  const std::uint64_t threshold = GENERATE(0u, 64u << 20);  // fusion off, on
  const bool sharedMemory = GENERATE(true, false);
  const int size = 3;
  INFO((hide ? "composed" : "own") << ", threshold " << threshold << (sharedMemory ? ", shm" : ", TCP"));
  hvd::engine::EngineOptions options;
  options.fusionThresholdBytes = threshold;
  std::atomic<int> calls{0};
  auto errors = onRanks(
      size, options,
      [&](int rank, Engine& e) -> std::string {
        // Rows from none to past the arena, rows of 1 to 3 elements, Sum and Average alternating.
        const std::uint64_t rowsOf[] = {0, 1, 2, 5, 9, 4000, 3, 7};
        std::vector<std::vector<float>> in, out;
        std::vector<hvd::engine::HandleId> handles;
        for (size_t i = 0; i < std::size(rowsOf); ++i) {
          const std::uint64_t perRow = 1 + i % 3;
          const ReduceOp op = i % 2 ? ReduceOp::kAverage : ReduceOp::kSum;
          in.push_back(ramp(rank, rowsOf[i] * perRow));
          out.emplace_back(hvd::engine::reducescatterShare(rowsOf[i], rank, size).rows * perRow, -1.0f);
          auto h = e.submit({"rs" + std::to_string(i), scatter(rowsOf[i], perRow, op), in.back().data(),
                             out.back().data(), out.back().size() * sizeof(float)});
          if (!h) return h.status().message();
          handles.push_back(*h);
        }
        for (size_t i = 0; i < std::size(rowsOf); ++i) {
          if (Status s = e.wait(handles[i]); !s.isOk()) return s.message();
          const std::uint64_t perRow = 1 + i % 3;
          const auto share = hvd::engine::reducescatterShare(rowsOf[i], rank, size);
          std::vector<float> all = over({0, 1, 2}, rowsOf[i] * perRow, i % 2 ? ReduceOp::kAverage : ReduceOp::kSum, size);
          if (out[i] != std::vector<float>(all.begin() + static_cast<long>(share.firstRow * perRow),
                                           all.begin() + static_cast<long>((share.firstRow + share.rows) * perRow))) {
            return "reducescatter " + std::to_string(i) + " is wrong";
          }
        }
        return "";
      },
      sharedMemory, 10s,
      [&](int, Backends& backends) {
        for (auto& b : backends) b = std::make_unique<PrimitiveCounter>(std::move(b), hide, calls);
      });
  CHECK(errors == none(size));
  // Unfused, each of the 7 with elements is its own reduce-scatter on each rank. Fused, the
  // ones ready in one cycle share one (2 a rank here, seen): all 7 apart would take every
  // rank's 8 submissions, made back to back, to reach 7 cycles one by one.
  if (!hide && threshold == 0) CHECK(calls.load() == 7 * size);
  if (!hide && threshold > 0) CHECK(calls.load() < 7 * size);
}

TEST_CASE("alltoall gives each rank the rows every rank sent it, in rank order, with splits or split evenly",
          "[mp][engine]") {
  const int size = 3;
  auto errors = onRanks(size, {}, [&](int rank, Engine& e) -> std::string {
    // Rank k sends rank d (k + d) % 3 rows of 2, each element 100 * k + 10 * d + its row.
    auto rowsFrom = [](int k, int d) { return static_cast<std::uint64_t>((k + d) % 3); };
    auto value = [](int k, int d, std::uint64_t row) { return static_cast<std::int32_t>(100 * k + 10 * d + row); };
    for (bool named : {true, false}) {
      std::vector<std::uint64_t> splits;
      std::vector<std::int32_t> send;
      for (int d = 0; d < size; ++d) {
        splits.push_back(rowsFrom(rank, d));
        for (std::uint64_t row = 0; row < rowsFrom(rank, d); ++row) send.insert(send.end(), 2, value(rank, d, row));
      }
      Spec spec{OpKind::kAlltoall, DataType::kInt32, ReduceOp::kSum, 0, send.size(), hvd::Device::kCpu};
      const std::int64_t trailing[] = {2};
      spec.rows = hvd::engine::rowShapeOf(trailing);
      Engine::Submission s{named ? "a2a" : "", spec, send.data()};
      s.splits = splits;
      auto h = e.submit(std::move(s));
      if (!h) return h.status().message();
      auto got = e.waitGathered(*h);
      if (!got) return got.status().message();
      std::vector<std::int32_t> expect;
      std::vector<std::uint64_t> counts;
      for (int k = 0; k < size; ++k) {
        counts.push_back(rowsFrom(k, rank) * 2);
        for (std::uint64_t row = 0; row < rowsFrom(k, rank); ++row) expect.insert(expect.end(), 2, value(k, rank, row));
      }
      std::vector<std::int32_t> all(got->bytes.size() / 4);
      std::memcpy(all.data(), got->bytes.data(), got->bytes.size());
      if (all != expect || got->counts != counts) return std::string(named ? "named" : "unnamed") + " alltoall is wrong";
    }
    // Without splits: 6 rows, 2 to each rank.
    std::vector<float> even = ramp(rank, 6);
    Spec spec{OpKind::kAlltoall, DataType::kFloat32, ReduceOp::kSum, 0, 6, hvd::Device::kCpu};
    auto h = e.submit({"even", spec, even.data()});
    if (!h) return h.status().message();
    auto got = e.waitGathered(*h);
    if (!got || got->counts != std::vector<std::uint64_t>(3, 2)) return "an even alltoall is wrong";
    std::vector<float> all(6);
    std::memcpy(all.data(), got->bytes.data(), 24);
    for (int k = 0; k < size; ++k) {
      std::vector<float> from = ramp(k, 6);
      if (all[2 * k] != from[2 * rank] || all[2 * k + 1] != from[2 * rank + 1]) return "an even alltoall's rows are wrong";
    }
    // Rows that do not split evenly, and splits that do not add up, are refused at once.
    std::vector<float> five(5);
    spec.count = 5;
    auto uneven = e.submit({"uneven", spec, five.data()});
    if (uneven || uneven.status().message().find("do not split evenly over 3 ranks") == std::string::npos) {
      return "5 rows were split over 3 ranks";
    }
    Engine::Submission wrong{"wrong", spec, five.data()};
    wrong.splits = {1, 1};
    auto bad = e.submit(std::move(wrong));
    if (bad || bad.status().message().find("splits give 2 ranks 2 rows") == std::string::npos) return "bad splits taken";
    return "";
  });
  CHECK(errors == none(size));
}
