// runtime/backends/tcp/contention_pin_test.cc: the pin's decisions on a clock the test moves,
// carried out on real threads of this process (each test on one of its own).
#include "runtime/backends/tcp/contention_pin.h"

#include <sched.h>

#include <catch2/catch.hpp>

#include <thread>

#include "runtime/common/cpu_budget.h"
#include "tests/support/skip.h"

using namespace std::chrono_literals;
using hvd::backends::tcp::ContentionPin;
using hvd::backends::tcp::WaitPolicy;

namespace {

// Contention found five times running (each probe after a quiet period finds it again), the
// last at the returned time.
WaitPolicy::Clock::time_point findContention(WaitPolicy& policy, WaitPolicy::Clock::time_point t) {
  auto quiet = WaitPolicy::kFirstQuiet;
  for (int i = 0; i < WaitPolicy::kPinAfter; ++i, t += quiet, quiet *= 2) policy.offCore(t);
  return t;
}

}  // namespace

TEST_CASE("a collective thread is held on the CPU its local rank picks while contention persists and let go once it has gone",
          "[contention_pin]") {
  const auto cpus = hvd::affinityCpus();
  if (cpus.size() < 2) hvd::test::skipTest("this process may use one CPU: there is nothing to pin down to");
  std::optional<int> early, during, after;
  int cpusDuring = 0, cpusAfter = 0;
  std::thread([&] {
    // Four ranks on two cores, with more runnable than the job: the busy loops of the issue.
    WaitPolicy policy(2, 4, [] { return std::optional<int>(8); });
    ContentionPin pin(cpus, 3, true);
    auto t = WaitPolicy::Clock::now();
    policy.offCore(t);
    pin.beforeCall(policy, t);  // once is a start-up's burst
    early = pin.pinnedCpu();
    t = findContention(policy, t + 1s);
    pin.beforeCall(policy, t);
    during = pin.pinnedCpu();
    cpusDuring = static_cast<int>(hvd::affinityCpus().size());
    pin.beforeCall(policy, t + WaitPolicy::kCalm);
    after = pin.pinnedCpu();
    cpusAfter = static_cast<int>(hvd::affinityCpus().size());
  }).join();
  CHECK_FALSE(early);
  CHECK(during == cpus[3 % cpus.size()]);
  CHECK(cpusDuring == 1);
  CHECK_FALSE(after);
  CHECK(cpusAfter == static_cast<int>(cpus.size()));
}

TEST_CASE("no collective thread is pinned when pinning is off or where each rank has a core or the process has one CPU",
          "[contention_pin]") {
  const auto cpus = hvd::affinityCpus();
  if (cpus.size() < 2) hvd::test::skipTest("this process may use one CPU: there is nothing to pin down to");
  std::optional<int> off, ownCores, oneCpu;
  std::thread([&] {
    WaitPolicy shared(2, 4, [] { return std::optional<int>(8); });
    auto t = findContention(shared, WaitPolicy::Clock::now());
    ContentionPin disabled(cpus, 1, false);
    disabled.beforeCall(shared, t);
    off = disabled.pinnedCpu();
    ContentionPin single({cpus.front()}, 1, true);
    single.beforeCall(shared, t);
    oneCpu = single.pinnedCpu();
    // Each rank has a core: lost slices are counted, and the ranks spin through them.
    WaitPolicy own(8, 4, [] { return std::optional<int>(8); });
    t = findContention(own, t);
    ContentionPin enabled(cpus, 1, true);
    enabled.beforeCall(own, t);
    ownCores = enabled.pinnedCpu();
  }).join();
  CHECK_FALSE(off);
  CHECK_FALSE(oneCpu);
  CHECK_FALSE(ownCores);
}

TEST_CASE("a collective thread whose own CPUs leave out its rank's CPU is not pinned then or later", "[contention_pin]") {
  const auto cpus = hvd::affinityCpus();
  if (cpus.size() < 2) hvd::test::skipTest("this process may use one CPU: there is nothing to pin down to");
  std::optional<int> pinned, later;
  int cpusAfter = 0;
  std::thread([&] {
    // The user narrowed this thread to the first CPU; local rank 1 would pick the second.
    cpu_set_t first;
    CPU_ZERO(&first);
    CPU_SET(cpus[0], &first);
    ::sched_setaffinity(0, sizeof first, &first);
    WaitPolicy policy(2, 4, [] { return std::optional<int>(8); });
    auto t = findContention(policy, WaitPolicy::Clock::now());
    ContentionPin pin(cpus, 1, true);
    pin.beforeCall(policy, t);
    pinned = pin.pinnedCpu();
    cpusAfter = static_cast<int>(hvd::affinityCpus().size());
    pin.beforeCall(policy, t + 1ms);
    later = pin.pinnedCpu();
  }).join();
  CHECK_FALSE(pinned);
  CHECK_FALSE(later);
  CHECK(cpusAfter == 1);
}
