// bench/count_in_floor.cc: what the scheduler allows a call of the host arena
// (runtime/backends/tcp/host_arena.h), with no runtime at all: N plain processes count
// themselves into a shared counter, the ones not last sleep on it at once (a futex), and the
// last one in wakes them all with one system call. No data moves and nothing spins, so
// beside busy loops it is the wake-ups alone. Where the processes outnumber the cores they
// ask for the 100 us slice our ranks ask for there (runtime/common/thread_slice.h).
// --wait yield: the processes not last spin on the counter with sched_yield instead of
// sleeping (nothing to wake). Beside busy loops its median is an idle call's, but the busy
// loops then take their share in whole scheduler ticks, during which every call waits
// (the mean 2.5x the sleeping floor's: docs/benchmarks.md, busy cores).
// Prints, as collective_perf --samples 1 does, each call's slowest process's time (us):
//   #samples 0 us us ...       (1000 figures a line; "size" 0: no data)
// for bench/contention_bench.sh's "floor" configuration.
//   count_in_floor [--np 4] [--seconds 0.3] [--wait sleep|yield]
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxCalls = 1000000;

struct alignas(64) Word {
  std::atomic<uint32_t> v;
};

struct Shared {
  Word arrived, finished, sleepers, stopAfter;  // stopAfter: the last call (0: none yet)
};

// Each call's time on each process (us), after the counters: [rank * kMaxCalls + call].
float& took(Shared& s, int rank, uint32_t call) {
  return reinterpret_cast<float*>(&s + 1)[static_cast<size_t>(rank) * kMaxCalls + call];
}

// sched_setattr's argument (linux/sched/types.h, which glibc does not wrap).
struct SchedAttr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};

void futexWait(std::atomic<uint32_t>& w, uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAIT, value, nullptr, nullptr, 0);
}
void futexWakeAll(std::atomic<uint32_t>& w) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAKE, std::numeric_limits<int>::max(), nullptr,
            nullptr, 0);
}

void runRank(Shared& s, int rank, int ranks, double seconds, bool shortSlice, bool yield) {
  if (shortSlice) {
    SchedAttr a{};
    a.size = sizeof a;
    a.runtime = 100000;  // ns: the slice (EEVDF, Linux 6.12); refused before, which is fine
    ::syscall(SYS_sched_setattr, 0, &a, 0);
  }
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  for (uint32_t call = 0;; ++call) {
    const auto begin = Clock::now();
    if (s.arrived.v.fetch_add(1) + 1 == static_cast<uint32_t>(ranks)) {
      s.arrived.v.store(0);
      s.finished.v.store(call + 1);
      if (s.sleepers.v.load() > 0) futexWakeAll(s.finished.v);
    } else if (yield) {
      while (s.finished.v.load() == call) ::sched_yield();
    } else {
      s.sleepers.v.fetch_add(1);
      while (s.finished.v.load() == call) futexWait(s.finished.v, call);
      s.sleepers.v.fetch_sub(1);
    }
    took(s, rank, call) = std::chrono::duration<float, std::micro>(Clock::now() - begin).count();
    // Rank 0 names the last call before its next arrival, so every rank that finishes the
    // call after this one has seen it: all stop after the same call.
    if (rank == 0 && s.stopAfter.v.load() == 0 && (Clock::now() >= end || call + 3 >= kMaxCalls)) {
      s.stopAfter.v.store(call + 1);
    }
    const uint32_t stop = s.stopAfter.v.load();
    if (stop != 0 && call >= stop) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 4;
  double seconds = 0.3;
  bool yield = false;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "count_in_floor: %s needs a value\n", argv[i]);
      return 2;
    }
    std::string value = argv[i + 1];
    if (flag == "--np") ranks = std::atoi(value.c_str());
    else if (flag == "--seconds") seconds = std::strtod(value.c_str(), nullptr);
    else if (flag == "--wait" && (value == "sleep" || value == "yield")) yield = value == "yield";
    else {
      std::fprintf(stderr, "count_in_floor: unknown argument '%s %s' (--np N, --seconds S, --wait sleep|yield)\n",
                   argv[i], argv[i + 1]);
      return 2;
    }
  }
  if (ranks < 2 || ranks > 256) {
    std::fprintf(stderr, "count_in_floor: --np %d: from 2 to 256 processes\n", ranks);
    return 2;
  }
  const size_t bytes = sizeof(Shared) + sizeof(float) * kMaxCalls * static_cast<size_t>(ranks);
  void* region = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) {
    std::perror("count_in_floor: mmap");
    return 1;
  }
  auto& s = *static_cast<Shared*>(region);  // zero pages: zeroed counters
  // The cores this process may run on, as our ranks count them (cpu_budget.h, less the quota).
  cpu_set_t cpus;
  const int cores = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const bool shortSlice = ranks > cores;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("count_in_floor: fork");
      return 1;
    }
    if (pid == 0) {
      runRank(s, r, ranks, seconds, shortSlice, yield);
      ::_exit(0);
    }
  }
  bool ok = true;
  for (int r = 0; r < ranks; ++r) {
    int status = 0;
    ok = ::wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
  }
  if (!ok) {
    std::fprintf(stderr, "count_in_floor: a process failed\n");
    return 1;
  }
  const uint32_t calls = s.stopAfter.v.load() + 1;
  for (uint32_t c = 0; c < calls; ++c) {
    float slowest = 0;
    for (int r = 0; r < ranks; ++r) slowest = std::max(slowest, took(s, r, c));
    if (c % 1000 == 0) std::printf("%s#samples 0", c == 0 ? "" : "\n");
    std::printf(" %.1f", slowest);
  }
  std::printf("\n");
  return 0;
}
