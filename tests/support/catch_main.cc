// tests/support/catch_main.cc: Catch2's main, compiled once and shared by every test.
// Catch's own main exits with the number of failed assertions, so a test with exactly as
// many failures as CTest's skip code would be reported as skipped, not failed (found: a
// test with 4 failed checks showed as "Skipped" under SKIP_RETURN_CODE 4). Here any
// failure exits 1, and only skipTest() (skip.h) exits with kSkipExitCode.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "tests/support/skip.h"

namespace hvd::test {

void skipTest(const std::string& reason) {
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);
}

}  // namespace hvd::test

int main(int argc, char** argv) { return Catch::Session().run(argc, argv) == 0 ? 0 : 1; }
