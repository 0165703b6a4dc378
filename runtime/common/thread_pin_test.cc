// runtime/common/thread_pin_test.cc: pins on real threads of this process, each test on
// threads of its own so the test runner's main thread keeps its mask.
#include "runtime/common/thread_pin.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <latch>
#include <thread>
#include <vector>

#include "tests/support/skip.h"

namespace {

std::vector<int> cpusOf(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// The CPUs the test may use; skips where there is only one (nothing to pin down to).
std::vector<int> twoOrMoreCpus() {
  auto cpus = cpusOf(0);
  if (cpus.size() < 2) hvd::test::skipTest("this process may use one CPU: a pin changes nothing");
  return cpus;
}

}  // namespace

TEST_CASE("a pinned thread runs on its one CPU and gets its CPUs back when released", "[thread_pin]") {
  const auto all = twoOrMoreCpus();
  std::vector<int> pinned, after, other;
  std::optional<int> held;
  std::thread([&] {
    hvd::ThreadPin pin;
    CHECK(pin.pinCaller(all.back()).isOk());
    pinned = cpusOf(0);
    held = pin.cpu();
    // Only this thread: one started before, or the process's other threads, keep theirs.
    other = cpusOf(::getpid());
    pin.release();
    after = cpusOf(0);
    CHECK_FALSE(pin.cpu());
  }).join();
  CHECK(pinned == std::vector<int>{all.back()});
  CHECK(held == all.back());
  CHECK(other == all);
  CHECK(after == all);
}

TEST_CASE("a pin that moves to another thread gives the first its CPUs back", "[thread_pin]") {
  const auto all = twoOrMoreCpus();
  hvd::ThreadPin pin;
  std::vector<int> firstWhilePinned, firstAfter, second;
  std::latch pinned(1), moved(1);
  // The second thread is not started by the first: it would inherit its one CPU.
  std::thread first([&] {
    CHECK(pin.pinCaller(all.front()).isOk());
    firstWhilePinned = cpusOf(0);
    pinned.count_down();
    moved.wait();
    firstAfter = cpusOf(0);
  });
  pinned.wait();
  std::thread([&] {
    CHECK(pin.pinCaller(all.back()).isOk());
    second = cpusOf(0);
    pin.release();
  }).join();
  moved.count_down();
  first.join();
  CHECK(firstWhilePinned == std::vector<int>{all.front()});
  CHECK(second == std::vector<int>{all.back()});
  CHECK(firstAfter == all);
}

TEST_CASE("a process forked by a pinned thread starts with the CPUs the thread had before the pin", "[thread_pin]") {
  const auto all = twoOrMoreCpus();
  int childCpus = -1;
  std::thread([&] {
    hvd::ThreadPin pin;
    CHECK(pin.pinCaller(all.front()).isOk());
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(static_cast<int>(cpusOf(0).size()));
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) childCpus = WEXITSTATUS(status);
    // The forking thread itself stays where it was held.
    CHECK(cpusOf(0) == std::vector<int>{all.front()});
  }).join();
  CHECK(childCpus == static_cast<int>(std::min<size_t>(all.size(), 255)));
}

TEST_CASE("a pin to a CPU outside the threads mask is refused and names the CPU", "[thread_pin]") {
  const auto all = twoOrMoreCpus();
  hvd::Status refused;
  std::vector<int> after;
  std::thread([&] {
    hvd::ThreadPin pin;
    refused = pin.pinCaller(CPU_SETSIZE + 3);
    after = cpusOf(0);
  }).join();
  CHECK(refused.code() == hvd::Errc::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("CPU " + std::to_string(CPU_SETSIZE + 3)));
  CHECK(after == all);
}

TEST_CASE("a held thread whose CPUs someone else changed meanwhile keeps that change when released", "[thread_pin]") {
  const auto all = twoOrMoreCpus();
  std::vector<int> after;
  std::thread([&] {
    hvd::ThreadPin pin;
    CHECK(pin.pinCaller(all.front()).isOk());
    // The program itself moves this thread (os.sched_setaffinity(0, ...) in Python).
    cpu_set_t other;
    CPU_ZERO(&other);
    CPU_SET(all.back(), &other);
    ::sched_setaffinity(0, sizeof other, &other);
    pin.release();
    after = cpusOf(0);
  }).join();
  CHECK(after == std::vector<int>{all.back()});
}
