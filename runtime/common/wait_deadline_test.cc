// runtime/common/wait_deadline_test.cc: the deadline on a moved clock.
#include "runtime/common/wait_deadline.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using hvd::WaitDeadline;

namespace {
const WaitDeadline::Clock::time_point t0{};
}

TEST_CASE("a wait with nothing arriving passes its deadline after the timeout and not before", "[wait_deadline]") {
  WaitDeadline d(3s, t0);
  CHECK_FALSE(d.passed(t0 + 500ms));
  d.sleepFor(t0 + 500ms);
  CHECK_FALSE(d.passed(t0 + 1500ms));
  d.sleepFor(t0 + 1500ms);
  CHECK_FALSE(d.passed(t0 + 2500ms));
  d.sleepFor(t0 + 2500ms);
  CHECK(d.passed(t0 + 3000ms));
}

TEST_CASE("bytes that arrive start the wait over", "[wait_deadline]") {
  WaitDeadline d(1s, t0);
  d.restart(t0 + 900ms);
  CHECK_FALSE(d.passed(t0 + 1500ms));
  CHECK(d.passed(t0 + 1900ms));
}

TEST_CASE("sleeps ask for at most a second and never past the deadline", "[wait_deadline]") {
  WaitDeadline d(30s, t0);
  CHECK(d.sleepFor(t0) == 1000ms);
  CHECK(d.sleepFor(t0 + 29700ms) == 300ms);
  CHECK(d.sleepFor(t0 + 31s) == 0ms);
}

TEST_CASE("a gap far longer than the sleep asked for is a pause and does not count", "[wait_deadline]") {
  WaitDeadline d(2s, t0);
  CHECK_FALSE(d.passed(t0 + 100ms));
  d.sleepFor(t0 + 100ms);  // 1 s asked
  // Stopped for 60 s inside that sleep: the wait had used 1.1 s of its 2 s before.
  CHECK_FALSE(d.passed(t0 + 61100ms));
  d.sleepFor(t0 + 61100ms);
  CHECK_FALSE(d.passed(t0 + 61900ms));
  d.sleepFor(t0 + 61900ms);
  CHECK(d.passed(t0 + 63000ms));
}

TEST_CASE("a pause while spinning does not count either", "[wait_deadline]") {
  WaitDeadline d(2s, t0);
  // No sleep asked: any gap past the slack is the process not running.
  CHECK_FALSE(d.passed(t0 + 10s));
  CHECK(d.sleepFor(t0 + 10s) == 1000ms);
  CHECK_FALSE(d.passed(t0 + 11s));
  d.sleepFor(t0 + 11s);
  CHECK(d.passed(t0 + 12s));
}

TEST_CASE("a late look within the slack is the wait's own time and counts", "[wait_deadline]") {
  WaitDeadline d(2s, t0);
  d.sleepFor(t0);  // 1 s asked
  CHECK_FALSE(d.passed(t0 + 1900ms));  // 0.9 s late: counted
  d.sleepFor(t0 + 1900ms);
  CHECK(d.passed(t0 + 2000ms));
}
