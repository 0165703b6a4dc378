// bench/engine_perf.cc: the engine's cost, run as N ranks under hvdrun. One step submits
// --tensors named allreduces of --bytes each (float32, sum), asynchronously, then
// synchronizes them all: what a training step's gradients do. The same names every step,
// so after the first step every name is cached. Rank 0 prints one line:
//   tensors bytes steps fusion_mb cycle_ms time_per_step_ms steps_per_s #wrong cpu_ms_per_step
// (the last: rank 0's CPU time over the timed steps, every thread: on a machine with fewer
// cores than ranks, what a feature such as the timeline costs shows there first).
// With --lone, it instead times one allreduce of --bytes through the blocking call and
// through allreduceAsync + synchronize, alternating, and prints both medians.
//   engine_perf [--tensors 1000] [--bytes 4096] [--steps 20] [--warmup 3] [--lone]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "engine_perf: rank %d: %s\n", hvd::rank(), what.c_str());
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double cpuMs() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double envNumber(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atof(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  size_t tensors = 1000, bytes = 4096;
  int steps = 20, warmup = 3;
  bool lone = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tensors") tensors = std::strtoull(next(), nullptr, 10);
    else if (a == "--bytes") bytes = std::strtoull(next(), nullptr, 10);
    else if (a == "--steps") steps = std::atoi(next());
    else if (a == "--warmup") warmup = std::atoi(next());
    else if (a == "--lone") lone = true;
    else die("unknown argument '" + a + "' (--tensors N --bytes B --steps S --warmup W --lone)");
  }
  if (auto s = hvd::init(); !s.isOk()) die("init: " + s.message());
  size_t count = bytes / sizeof(float);
  int size = hvd::size();
  if (lone) {
    std::vector<float> data(count, 1.0f);
    std::vector<double> blocking, async;
    int wrong = 0;
    for (int i = 0; i < warmup + steps; ++i) {
      for (int path = 0; path < 2; ++path) {
        std::fill(data.begin(), data.end(), 1.0f);
        auto t0 = Clock::now();
        hvd::Status s;
        if (path == 0) {
          s = hvd::allreduce(data.data(), count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
        } else {
          auto h = hvd::allreduceAsync("lone", data.data(), data.data(), count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
          s = h ? hvd::synchronize(*h) : h.status();
        }
        double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (!s.isOk()) die(s.message());
        wrong += data[count - 1] != static_cast<float>(size);
        if (i >= warmup) (path == 0 ? blocking : async).push_back(us);
      }
    }
    if (hvd::rank() == 0) {
      std::printf("# lone allreduce of %zu bytes, np %d, medians of %d\n", bytes, size, steps);
      std::printf("#  blocking(us)  async+synchronize(us)  ratio  #wrong\n");
      std::printf("%14.1f %22.1f %6.3f %7d\n", median(blocking), median(async), median(async) / median(blocking), wrong);
    }
    hvd::shutdown();
    return 0;
  }
  std::vector<std::vector<float>> grads(tensors, std::vector<float>(count));
  std::vector<std::string> names(tensors);
  for (size_t t = 0; t < tensors; ++t) names[t] = "grad." + std::to_string(t);
  std::vector<hvd::Handle> handles(tensors);
  std::vector<double> times;
  int wrong = 0;
  double cpuStart = 0;
  for (int step = 0; step < warmup + steps; ++step) {
    if (step == warmup) cpuStart = cpuMs();
    for (auto& g : grads) std::fill(g.begin(), g.end(), static_cast<float>(hvd::rank() + 1));
    auto t0 = Clock::now();
    for (size_t t = 0; t < tensors; ++t) {
      auto h = hvd::allreduceAsync(names[t], grads[t].data(), grads[t].data(), count, hvd::DataType::kFloat32,
                                   hvd::ReduceOp::kSum);
      if (!h) die(h.status().message());
      handles[t] = *h;
    }
    for (size_t t = 0; t < tensors; ++t) {
      if (auto s = hvd::synchronize(handles[t]); !s.isOk()) die(s.message());
    }
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    float want = static_cast<float>(size * (size + 1) / 2);
    for (const auto& g : grads) wrong += !g.empty() && g.back() != want;
    if (step >= warmup) times.push_back(ms);
  }
  double cpuPerStep = (cpuMs() - cpuStart) / std::max(steps, 1);
  if (hvd::rank() == 0) {
    double m = median(times);
    std::printf("%8zu %8zu %6d %9.0f %8.2f %16.3f %11.1f %6d %8.3f\n", tensors, bytes, steps,
                envNumber("HOROVOD_FUSION_THRESHOLD", 134217728) / 1048576.0, envNumber("HOROVOD_CYCLE_TIME", 1), m,
                1000.0 / m, wrong, cpuPerStep);
  }
  hvd::shutdown();
  return 0;
}
