// tests/e2e/engine_rank.cc: a rank that uses the public async API for real, started by
// hvdrun, for the engine's end-to-end tests:
//   engine_rank async <threads>   each of <threads> threads submits 50 named allreduces in
//                                 an order that differs by rank and thread, then checks
//                                 them; prints "async ok <count>"
//   engine_rank mismatch          rank 1 submits tensor 'w' with 7 elements, the others 8;
//                                 every rank prints "error: <message>" and exits 0
//   engine_rank stall <seconds>   the last rank sleeps <seconds> before submitting tensor
//                                 'late'; the others wait on it; prints "late ok"
//   engine_rank throw             ten named allreduces, then the last rank computes for
//                                 300 ms and throws an exception nobody catches
//                                 (std::terminate: SIGABRT)
//   engine_rank env               prints the HOROVOD_* engine variables it was given
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "rank %d: %s\n", hvd::rank(), what.c_str());
  return 1;
}

int async(int threads) {
  std::vector<std::string> failures(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &failures] {
      std::vector<int> order(50);
      for (int i = 0; i < 50; ++i) order[static_cast<size_t>(i)] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(hvd::rank() * 100 + t)));
      std::vector<std::vector<float>> data(50);
      std::vector<hvd::Handle> handles(50);
      for (int i : order) {
        auto& d = data[static_cast<size_t>(i)];
        d.assign(static_cast<size_t>(i + 1), static_cast<float>(hvd::rank() + i));
        auto h = hvd::allreduceAsync("t" + std::to_string(t) + "/g" + std::to_string(i), d.data(), d.data(), d.size(),
                                     hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
        if (!h) return void(failures[static_cast<size_t>(t)] = h.status().message());
        handles[static_cast<size_t>(i)] = *h;
      }
      float ranks = static_cast<float>(hvd::size() * (hvd::size() - 1) / 2);
      for (int i = 0; i < 50; ++i) {
        if (auto s = hvd::synchronize(handles[static_cast<size_t>(i)]); !s.isOk()) {
          return void(failures[static_cast<size_t>(t)] = s.message());
        }
        if (data[static_cast<size_t>(i)].back() != ranks + static_cast<float>(hvd::size() * i)) {
          return void(failures[static_cast<size_t>(t)] = "wrong sum for g" + std::to_string(i));
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& f : failures) {
    if (!f.empty()) return fail(f);
  }
  std::printf("async ok %d\n", threads * 50);
  return 0;
}

int mismatch() {
  std::vector<float> w(8, 1.0f);
  size_t count = hvd::rank() == 1 ? 7 : 8;
  auto h = hvd::allreduceAsync("w", w.data(), w.data(), count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
  if (!h) return fail(h.status().message());
  hvd::Status s = hvd::synchronize(*h);
  if (s.isOk()) return fail("the mismatched allreduce succeeded");
  std::printf("error: %s\n", s.message().c_str());
  return 0;
}

int stall(int seconds) {
  if (hvd::rank() == hvd::size() - 1) std::this_thread::sleep_for(std::chrono::seconds(seconds));
  double v = 1;
  auto h = hvd::allreduceAsync("late", &v, &v, 1, hvd::DataType::kFloat64, hvd::ReduceOp::kSum);
  if (!h) return fail(h.status().message());
  if (auto s = hvd::synchronize(*h); !s.isOk()) return fail(s.message());
  std::printf("late ok %g\n", v);
  return 0;
}

int throwing() {
  for (int i = 0; i < 10; ++i) {
    double v = 1;
    auto h = hvd::allreduceAsync("step." + std::to_string(i), &v, &v, 1, hvd::DataType::kFloat64, hvd::ReduceOp::kSum);
    if (!h) return fail(h.status().message());
    if (auto s = hvd::synchronize(*h); !s.isOk()) return fail(s.message());
  }
  if (hvd::rank() == hvd::size() - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    throw std::runtime_error("a training step failed");
  }
  double v = 1;  // the others wait for it in a collective it never joins
  auto h = hvd::allreduceAsync("never", &v, &v, 1, hvd::DataType::kFloat64, hvd::ReduceOp::kSum);
  if (h) (void)hvd::synchronize(*h);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "env") {
    for (const char* name : {"HOROVOD_FUSION_THRESHOLD", "HOROVOD_CYCLE_TIME", "HOROVOD_CACHE_CAPACITY",
                             "HOROVOD_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_TIME_SECONDS",
                             "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_LOG_LEVEL"}) {
      const char* v = std::getenv(name);
      if (v != nullptr) std::printf("%s=%s\n", name, v);
    }
    return 0;
  }
  if (auto s = hvd::init(); !s.isOk()) return fail("init failed: " + s.message());
  int rc = mode == "async" && argc > 2      ? async(std::atoi(argv[2]))
           : mode == "mismatch"             ? mismatch()
           : mode == "stall" && argc > 2    ? stall(std::atoi(argv[2]))
           : mode == "throw"                ? throwing()
                                            : fail("usage: engine_rank async N | mismatch | stall SECONDS | throw | env");
  hvd::shutdown();
  return rc;
}
