// runtime/backends/tcp/wait_policy_test.cc: the policy's decisions, on a clock the test moves.
#include "runtime/backends/tcp/wait_policy.h"

#include <sched.h>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using hvd::backends::tcp::WaitPolicy;

TEST_CASE("ranks that each have a core spin without yielding and ranks that outnumber the cores yield", "[wait_policy]") {
  WaitPolicy own(8, 4, nullptr);
  CHECK_FALSE(own.base().yield);
  CHECK(own.base().budget == 2000us);
  WaitPolicy shared(2, 4, nullptr);
  CHECK(shared.base().yield);
  CHECK(shared.base().budget == 200us);
  CHECK(shared.base().budget < own.base().budget);
}

TEST_CASE("the control path's cap bounds a spin's tries and budget but never raises them", "[wait_policy]") {
  WaitPolicy own(8, 2, nullptr);
  WaitPolicy::Spin cap{200, false, 50us};
  auto spin = own.spinFor(WaitPolicy::Clock::now(), &cap);
  CHECK(spin.tries == 200);
  CHECK(spin.budget == 50us);
  WaitPolicy::Spin generous{100000, false, 1s};
  CHECK(own.spinFor(WaitPolicy::Clock::now(), &generous).budget == 2000us);
}

TEST_CASE("where ranks share cores a spin found off its core makes waits sleep at once until the quiet period ends", "[wait_policy]") {
  WaitPolicy policy(2, 4, nullptr);
  auto t0 = WaitPolicy::Clock::now();
  CHECK(policy.spinFor(t0).budget > 0us);
  CHECK(policy.offCore(t0));
  CHECK(policy.contendedSpins() == 1);
  CHECK(policy.spinFor(t0 + 1ms).budget == 0us);
  CHECK(policy.spinFor(t0 + WaitPolicy::kFirstQuiet - 1us).budget == 0us);
  CHECK(policy.spinFor(t0 + WaitPolicy::kFirstQuiet).budget == 200us);
}

namespace {

// Runs `body` on this thread pinned to one CPU it may use, which it gets, and restores the
// affinity after: the policy asks the kernel where the thread runs.
template <typename Body>
void onOneCpu(Body body) {
  cpu_set_t all, one;
  CPU_ZERO(&all);
  REQUIRE(::sched_getaffinity(0, sizeof all, &all) == 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &all)) ++cpu;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  body(cpu);
  ::sched_setaffinity(0, sizeof all, &all);
}

}  // namespace

TEST_CASE("ranks that each have a core count a lost slice as contention but keep spinning", "[wait_policy]") {
  // The peer a rank waits for runs on another core: the spin takes time only from the other
  // work on this one, which the scheduler shares out anyway, and a sleeping rank waits to be
  // woken onto a core that work holds (np=2 beside 2 busy loops: 23 us a call against 1).
  onOneCpu([](int cpu) {
    WaitPolicy policy(2, 2, [] { return std::optional<int>(4); });
    auto board = hvd::backends::tcp::HostBoard::inProcess();
    policy.shareBoard(board, 0);
    board->ranOn(1, cpu + 1);
    auto t0 = WaitPolicy::Clock::now();
    CHECK_FALSE(policy.spinFor(t0).yield);
    CHECK_FALSE(policy.offCore(t0));
    CHECK(policy.contendedSpins() == 1);
    CHECK_FALSE(policy.quietAt(t0 + 1ms));
    CHECK(policy.spinFor(t0 + 1ms).budget == 2000us);
    // A host of one rank has no peer on its cores, board or not.
    WaitPolicy alone(2, 1, nullptr);
    CHECK_FALSE(alone.offCore(t0));
    CHECK(alone.spinFor(t0 + 1ms).budget == 2000us);
    // Without a board a rank cannot tell whether the scheduler stacked it on a peer's core
    // (the next test): it sleeps, as ranks that share cores do.
    WaitPolicy blind(2, 2, nullptr);
    CHECK(blind.offCore(t0));
    CHECK(blind.quietAt(t0 + 1ms));
  });
}

TEST_CASE("ranks that each have a core yield from the first try while another rank last ran on their CPU", "[wait_policy]") {
  // The scheduler may stack two ranks on one core though each could have its own: a spin
  // flat out then holds the core the peer needs (np=2 over TCP held on one CPU: p90 1.1 ms
  // a call, 24 us yielding).
  onOneCpu([](int cpu) {
    WaitPolicy policy(2, 2, [] { return std::optional<int>(2); });
    auto board = hvd::backends::tcp::HostBoard::inProcess();
    policy.shareBoard(board, 1);
    auto t0 = WaitPolicy::Clock::now();
    board->ranOn(0, cpu + 1);
    CHECK_FALSE(policy.spinFor(t0).yield);
    board->ranOn(0, cpu);
    auto spin = policy.spinFor(t0);
    CHECK(spin.yield);
    CHECK(spin.budget == 2000us);
    // The peer moved on: flat out again.
    board->ranOn(0, cpu + 1);
    CHECK_FALSE(policy.spinFor(t0).yield);
    // The note is this thread's CPU, which the peer reads.
    CHECK(board->cpuShared(0, 2) == false);
    board->ranOn(0, cpu);
    CHECK(board->cpuShared(0, 2) == true);
  });
}

TEST_CASE("contention that persists doubles the quiet period up to its longest and a passing burst starts over", "[wait_policy]") {
  WaitPolicy policy(2, 4, nullptr);
  auto t = WaitPolicy::Clock::now();
  policy.offCore(t);
  auto quiet = WaitPolicy::kFirstQuiet;
  for (int i = 0; i < 10; ++i) {
    // The probe after each period finds the core taken again at once.
    t += quiet;
    CHECK_FALSE(policy.quietAt(t));
    policy.offCore(t);
    quiet = std::min(quiet * 2, WaitPolicy::kLongestQuiet);
    CHECK(policy.quietAt(t + quiet - 1us));
    CHECK_FALSE(policy.quietAt(t + quiet));
  }
  CHECK(quiet == WaitPolicy::kLongestQuiet);
  // Long after: the machine was free meanwhile, so the next burst gets the shortest period.
  t += 100 * WaitPolicy::kLongestQuiet;
  policy.offCore(t);
  CHECK(policy.quietAt(t + WaitPolicy::kFirstQuiet - 1us));
  CHECK_FALSE(policy.quietAt(t + WaitPolicy::kFirstQuiet));
}

TEST_CASE("a fixed spin stays as given until contention is found", "[wait_policy]") {
  WaitPolicy fixed(WaitPolicy::Spin{0, false, 2000us});
  auto t = WaitPolicy::Clock::now();
  CHECK(fixed.spinFor(t).budget == 2000us);
  fixed.offCore(t);
  CHECK(fixed.spinFor(t).budget == 0us);
}

TEST_CASE("where ranks outnumber the cores a lost slice counts only when more is runnable than the job's ranks", "[wait_policy]") {
  int runnable = 4;
  WaitPolicy shared(2, 4, [&] { return std::optional<int>(runnable); });
  auto t = WaitPolicy::Clock::now();
  // Four ranks (and an engine thread) on two cores: a peer kept the core; that is the job.
  for (int n : {1, 4, 5}) {
    runnable = n;
    CHECK_FALSE(shared.offCore(t));
    CHECK(shared.spinFor(t).budget == 200us);
  }
  runnable = 6;
  CHECK(shared.offCore(t));
  CHECK(shared.spinFor(t).budget == 0us);
  // Ranks that each have a core (here the host's only rank): a lost slice is someone else's,
  // whatever the count. It is counted, and the waits go on spinning (why: the test of ranks
  // that each have a core).
  runnable = 1;
  WaitPolicy own(8, 1, [&] { return std::optional<int>(runnable); });
  CHECK_FALSE(own.offCore(t));
  CHECK(own.contendedSpins() == 1);
  CHECK(own.spinFor(t).budget == 2000us);
}

TEST_CASE("where ranks outnumber the cores a spin that runs out its budget while others run makes waits sleep at once",
          "[wait_policy]") {
  int runnable = 4;
  WaitPolicy shared(2, 4, [&] { return std::optional<int>(runnable); });
  auto t = WaitPolicy::Clock::now();
  // Only the job runnable: the peer is slow, not starved; the next wait spins again.
  CHECK_FALSE(shared.spunOut(t));
  CHECK(shared.spinFor(t + 1ms).budget == 200us);
  runnable = 6;
  CHECK(shared.spunOut(t));
  CHECK(shared.contendedSpins() == 1);
  CHECK(shared.spinFor(t + 1ms).budget == 0us);
  runnable = 4;  // the other work has gone by the period's end
  CHECK(shared.spinFor(t + WaitPolicy::kFirstQuiet).budget == 200us);
  // Ranks that each have a core spin for a peer on another core: running out is its copy's
  // time, whatever else runs.
  WaitPolicy own(8, 2, [&] { return std::optional<int>(runnable); });
  CHECK_FALSE(own.spunOut(t));
  CHECK(own.spinFor(t + 1ms).budget == 2000us);
}

TEST_CASE("a waiting loop whose spin runs out tells the policy", "[wait_policy]") {
  WaitPolicy shared(2, 4, [] { return std::optional<int>(6); });
  auto start = WaitPolicy::Clock::now();
  hvd::backends::tcp::SpinLoop loop(shared, WaitPolicy::Spin{2, true, 1us}, start);
  int tries = 0;
  while (loop.again()) ++tries;
  CHECK(tries >= 1);
  CHECK(shared.contendedSpins() == 1);
  CHECK(shared.quietAt(WaitPolicy::Clock::now()));
}

TEST_CASE("where ranks outnumber the cores waiting threads ask for short slices and where each has a core they do not", "[wait_policy]") {
  WaitPolicy shared(2, 4, nullptr);
  CHECK(shared.threadSlice() == WaitPolicy::kSharedCoreSlice);
  // Ranks that each have a core keep the kernel's slice: a short one cost them (np=2 beside
  // busy loops, 256 KiB over TCP 50 -> 100 us).
  CHECK_FALSE(WaitPolicy(8, 4, nullptr).threadSlice().has_value());
  CHECK_FALSE(WaitPolicy(WaitPolicy::Spin{0, false, 2000us}).threadSlice().has_value());
}

TEST_CASE("ranks asleep on the host board are not counted awake so busy loops beside them count as contention", "[wait_policy]") {
  int runnable = 5;
  WaitPolicy shared(2, 4, [&] { return std::optional<int>(runnable); });
  auto board = hvd::backends::tcp::HostBoard::inProcess();
  shared.shareBoard(board, 0);
  auto t = WaitPolicy::Clock::now();
  // Nobody asleep: five runnable tasks are the four ranks and one more, as without a board.
  CHECK_FALSE(shared.offCore(t));
  // Two ranks asleep: of the five, three are not the job's (two busy loops, say).
  shared.asleep();
  shared.asleep();
  CHECK(board->sleeping() == 2);
  CHECK(shared.offCore(t));
  CHECK(shared.spinFor(t).budget == 0us);
  // The same two asleep with nothing else running: the two awake ranks and one more.
  WaitPolicy idle(2, 4, [&] { return std::optional<int>(runnable); });
  idle.shareBoard(board, 1);
  runnable = 3;
  CHECK_FALSE(idle.offCore(t));
  // A count past the ranks (a rank killed asleep) leaves this thread counted awake.
  for (int i = 0; i < 10; ++i) idle.asleep();
  runnable = 2;
  CHECK_FALSE(idle.offCore(t));
  for (int i = 0; i < 12; ++i) idle.awake();
  CHECK(board->sleeping() == 0);
}

TEST_CASE("ranks bound to a core each wait as ranks with their own cores once the board has every ranks CPUs", "[wait_policy]") {
  // Two ranks, each seeing one CPU (hvdrun --bind-to core, srun --cpu-bind=cores).
  WaitPolicy policy(1, 2, nullptr);
  auto board = hvd::backends::tcp::HostBoard::inProcess();
  policy.shareBoard(board, 0);
  auto t = WaitPolicy::Clock::now();
  board->join({0}, std::nullopt);
  // Until the other rank has joined, this rank knows only its own CPU.
  CHECK(policy.spinFor(t).yield);
  CHECK(policy.threadSlice() == WaitPolicy::kSharedCoreSlice);
  board->join({1}, std::nullopt);
  auto spin = policy.spinFor(t);
  CHECK_FALSE(spin.yield);
  CHECK(spin.budget == 2000us);
  CHECK_FALSE(policy.threadSlice().has_value());
  // Two ranks bound to the same CPU share it.
  WaitPolicy stacked(1, 2, nullptr);
  auto one = hvd::backends::tcp::HostBoard::inProcess();
  stacked.shareBoard(one, 0);
  one->join({0}, std::nullopt);
  one->join({0}, std::nullopt);
  CHECK(stacked.spinFor(t).yield);
  CHECK(stacked.threadSlice() == WaitPolicy::kSharedCoreSlice);
}

TEST_CASE("where ranks share cores a quiet period that ends with others still runnable is renewed without a spin", "[wait_policy]") {
  int runnable = 6;  // four ranks awake and two busy loops
  WaitPolicy shared(2, 4, [&] { return std::optional<int>(runnable); });
  auto t = WaitPolicy::Clock::now();
  REQUIRE(shared.offCore(t));
  // The period ends; the busy loops are still there: no probe (which would lose a slice),
  // another period, twice as long.
  t += WaitPolicy::kFirstQuiet;
  CHECK(shared.spinFor(t).budget == 0us);
  CHECK(shared.quietAt(t + 2 * WaitPolicy::kFirstQuiet - 1us));
  CHECK(shared.contendedSpins() == 2);
  // They have stopped by the end of that one: the spin comes back.
  runnable = 4;
  t += 2 * WaitPolicy::kFirstQuiet;
  CHECK(shared.spinFor(t).budget == 200us);
  CHECK(shared.spinFor(t + 1ms).budget == 200us);
  CHECK(shared.contendedSpins() == 2);
}

TEST_CASE("contention persists once it has been found five times running where ranks outnumber the cores", "[wait_policy]") {
  WaitPolicy shared(2, 4, nullptr);
  auto t = WaitPolicy::Clock::now();
  auto quiet = WaitPolicy::kFirstQuiet;
  for (int found = 1; found <= 5; ++found) {
    CHECK_FALSE(shared.contentionPersists(t));
    shared.offCore(t);
    t += quiet;
    quiet *= 2;
  }
  CHECK(shared.contentionPersists(t));
  // A calm spell ends it; the next burst starts the count over.
  t += WaitPolicy::kCalm;
  CHECK_FALSE(shared.contentionPersists(t));
  shared.offCore(t);
  CHECK_FALSE(shared.contentionPersists(t));
  // Ranks that each have a core keep spinning through lost slices: nothing persists for them.
  WaitPolicy own(8, 4, nullptr);
  for (int i = 0; i < 10; ++i) own.offCore(t + i * 1ms);
  CHECK_FALSE(own.contentionPersists(t + 10ms));
}
