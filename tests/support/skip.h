// tests/support/skip.h: how a test says it cannot run here, for every test binary (defined
// in catch_main.cc, which each one links).
#pragma once

#include <string>

namespace hvd::test {

// Prints "SKIPPED: <reason>" and ends the test process with kSkipExitCode, CTest's
// SKIP_RETURN_CODE for every test here (cmake/HvdTesting.cmake, tests/CMakeLists.txt).
// Failures exit 1 (tests/support/catch_main.cc), so the two never meet.
inline constexpr int kSkipExitCode = 77;
[[noreturn]] void skipTest(const std::string& reason);

}  // namespace hvd::test
