// runtime/common/thread_slice_test.cc: slice requests on real threads of this process.
#include "runtime/common/thread_slice.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tests/support/skip.h"

using namespace std::chrono_literals;

namespace {

// The slice a child process of the calling thread starts with, through a pipe (0: none).
std::optional<std::chrono::microseconds> childProcessSlice() {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  pid_t pid = ::fork();
  if (pid == 0) {
    auto slice = hvd::threadSlice();
    long long us = slice ? slice->count() : 0;
    (void)!::write(fds[1], &us, sizeof us);
    ::_exit(0);
  }
  ::close(fds[1]);
  long long us = 0;
  bool read = pid > 0 && ::read(fds[0], &us, sizeof us) == sizeof us;
  ::close(fds[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  if (!read || us == 0) return std::nullopt;
  return std::chrono::microseconds(us);
}

}  // namespace

TEST_CASE("a thread that asks for a short slice gets it and keeps its nice value but the threads and processes it starts get the default", "[thread_slice]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  const auto kernels = *hvd::threadSlice();
  std::string error;
  std::optional<std::chrono::microseconds> got, thread, process;
  int niceAfter = 0;
  // On a thread of its own, so the test's main thread keeps its slice and nice value.
  std::thread([&] {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 5);
    if (auto s = hvd::requestThreadSlice(100us); !s.isOk()) error = s.message();
    got = hvd::threadSlice();
    niceAfter = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    // A data loader's workers, a framework's threads: not waiting in collectives, they would
    // otherwise be put on a core ahead of the ranks' own waits.
    std::thread([&] { thread = hvd::threadSlice(); }).join();
    process = childProcessSlice();
  }).join();
  CHECK(error == "");
  CHECK(got == 100us);
  CHECK(niceAfter == 5);
  CHECK(thread == kernels);
  CHECK(process == kernels);
}

TEST_CASE("a thread with a negative nice value that asks for a short slice passes both on to its threads", "[thread_slice]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  std::optional<std::chrono::microseconds> thread;
  int threadNice = 0;
  bool raised = false;
  std::thread([&] {
    raised = ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), -2) == 0;
    if (!raised) return;
    (void)hvd::requestThreadSlice(100us);
    // The kernel's reset on fork would give them nice 0: a priority someone chose for the
    // job is kept rather than the slice undone.
    std::thread([&] {
      thread = hvd::threadSlice();
      threadNice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    }).join();
  }).join();
  if (!raised) hvd::test::skipTest("a negative nice value needs CAP_SYS_NICE, which this test does not have");
  CHECK(thread == 100us);
  CHECK(threadNice == -2);
}

TEST_CASE("a slice outside the kernel's range is clamped to it", "[thread_slice]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  std::optional<std::chrono::microseconds> tiny;
  std::thread([&] {
    (void)hvd::requestThreadSlice(1us);
    tiny = hvd::threadSlice();
  }).join();
  CHECK(tiny == 100us);
}

TEST_CASE("a thread that asks for a slice of 0 after a short one gets the kernel's default back", "[thread_slice]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  const auto kernels = *hvd::threadSlice();
  std::optional<std::chrono::microseconds> shortened, restored;
  std::string error;
  std::thread([&] {
    (void)hvd::requestThreadSlice(100us);
    shortened = hvd::threadSlice();
    if (auto s = hvd::requestThreadSlice(0us); !s.isOk()) error = s.message();
    restored = hvd::threadSlice();
  }).join();
  CHECK(error == "");
  CHECK(shortened == 100us);
  CHECK(restored == kernels);
}
