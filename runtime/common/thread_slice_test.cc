// runtime/common/thread_slice_test.cc: slice requests on real threads of this process.
#include "runtime/common/thread_slice.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <thread>

#include "tests/support/skip.h"

using namespace std::chrono_literals;

TEST_CASE("a thread that asks for a short slice gets it and keeps its nice value and its threads inherit it", "[thread_slice]") {
  if (!hvd::threadSlice()) {
    hvd::test::skipTest("this kernel keeps no time slice per thread (custom slices came with Linux 6.12)");
  }
  std::string error;
  std::optional<std::chrono::microseconds> got, child;
  int niceAfter = 0;
  // On a thread of its own, so the test's main thread keeps its slice and nice value.
  std::thread([&] {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 5);
    if (auto s = hvd::requestThreadSlice(100us); !s.isOk()) error = s.message();
    got = hvd::threadSlice();
    niceAfter = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    std::thread([&] { child = hvd::threadSlice(); }).join();
  }).join();
  CHECK(error == "");
  CHECK(got == 100us);
  CHECK(niceAfter == 5);
  CHECK(child == 100us);
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
