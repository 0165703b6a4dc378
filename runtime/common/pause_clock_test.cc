// runtime/common/pause_clock_test.cc: stretches merged, on times far past any other test's.
#include "runtime/common/pause_clock.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("a pause noticed by two threads counts once and a later one adds to it", "[pause_clock]") {
  const hvd::PauseClockTime t0 = hvd::PauseClockTime{} + 1000000h;  // after anything else noted here
  const auto before = hvd::pausedSoFar();
  hvd::notePause(t0, t0 + 4s);
  hvd::notePause(t0 + 1s, t0 + 4s);      // the same pause, seen from a sleep that began later
  hvd::notePause(t0 + 500ms, t0 + 4500ms);  // seen a little later still: only the last 0.5 s is new
  CHECK(hvd::pausedSoFar() - before == 4500ms);
  hvd::notePause(t0 + 10s, t0 + 12s);
  CHECK(hvd::pausedSoFar() - before == 6500ms);
  hvd::notePause(t0 + 11s, t0 + 11500ms);  // inside one already counted
  CHECK(hvd::pausedSoFar() - before == 6500ms);
}
