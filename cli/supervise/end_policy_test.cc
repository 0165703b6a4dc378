// cli/supervise/end_policy_test.cc: who ended a job, fed ends and times, with no processes.
#include "cli/supervise/end_policy.h"

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <map>

namespace hvd::cli {
namespace {

using Clock = EndPolicy::Clock;
using namespace std::chrono_literals;

int exited(int code) { return (code & 0xff) << 8; }  // a waitpid status, as W* read it
int killedBy(int sig) { return sig & 0x7f; }

// Processes that exist only as a record: what the policy sent each one, and which run.
class Recorded final : public EndPolicy::Processes {
 public:
  explicit Recorded(int ranks) {
    for (int r = 0; r < ranks; ++r) {
      RankProcess p;
      p.rank = r;
      p.host = "node" + std::to_string(r / 2);
      specs.push_back(p);
      runningNow.push_back(true);
    }
  }
  size_t count() const override { return specs.size(); }
  const RankProcess& spec(size_t p) const override { return specs[p]; }
  pid_t pid(size_t p) const override { return static_cast<pid_t>(1000 + p); }
  bool running(size_t p) const override { return runningNow[p]; }
  void signal(size_t p, int sig) override { sent[p].push_back(sig); }
  bool orderStop(size_t, int) override { return false; }
  bool dying(size_t p) const override { return dyingNow.count(p) > 0; }
  std::set<size_t> frozen(const std::set<size_t>& candidates) const override {
    std::set<size_t> out;
    for (size_t p : candidates) {
      if (frozenNow.count(p)) out.insert(p);
    }
    return out;
  }
  bool beforeJobsSent() const override { return false; }
  bool held() const override { return false; }
  std::deque<std::string> lastStderr(size_t p) const override { return {"last words of " + std::to_string(p)}; }
  std::deque<std::string> labelledStderr(int) const override { return {}; }

  // The process ended: the supervisor marks it so before it tells the policy.
  void end(EndPolicy& policy, size_t p, int status, Clock::time_point at) {
    runningNow[p] = false;
    policy.processEnded(p, status, at);
  }
  bool got(size_t p, int sig) const {
    auto it = sent.find(p);
    return it != sent.end() && std::find(it->second.begin(), it->second.end(), sig) != it->second.end();
  }

  std::vector<RankProcess> specs;
  std::vector<bool> runningNow;
  std::set<size_t> dyingNow, frozenNow;
  std::map<size_t, std::vector<int>> sent;
};

SupervisorOptions ranksOptions(int ranks) {
  SupervisorOptions o;
  o.rankCount = ranks;
  o.killGrace = 5000ms;
  return o;
}

}  // namespace

TEST_CASE("the first rank to fail is the root cause and every other rank is told to stop", "[unit][end]") {
  Recorded ranks(4);
  SupervisorOptions options = ranksOptions(4);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 2, exited(3), t0);
  for (size_t p : {0, 1, 3}) CHECK(ranks.got(p, SIGTERM));
  CHECK_FALSE(ranks.got(2, SIGTERM));
  // Stopped as told: 143 is how they obey, not a failure of their own.
  for (size_t p : {0, 1, 3}) ranks.end(policy, p, killedBy(SIGTERM), t0 + 10ms);
  JobOutcome& outcome = policy.finish();
  REQUIRE(outcome.firstFailure);
  CHECK(outcome.firstFailure->rank == 2);
  CHECK(outcome.firstFailure->host == "node1");
  CHECK(outcome.firstFailure->lastStderrLines == std::deque<std::string>{"last words of 2"});
  CHECK(outcome.exitCode == 3);
  CHECK(outcome.ranksStopped == 3);
  CHECK(outcome.alsoFailed.empty());
}

TEST_CASE("a crash reaped within the cause window takes the cause over from an error exit, and one after it does not",
          "[unit][end]") {
  for (auto [after, crashWins] : {std::pair{100ms, true}, std::pair{400ms, false}}) {
    INFO("crash reaped " << after.count() << " ms after the error exit");
    Recorded ranks(3);
    SupervisorOptions options = ranksOptions(3);
    EndPolicy policy(options, ranks);
    const auto t0 = Clock::now();
    ranks.end(policy, 1, exited(1), t0);           // a survivor that saw its peer's sockets close
    ranks.end(policy, 0, killedBy(SIGKILL), t0 + after);  // the crash (no one sent it SIGKILL)
    ranks.end(policy, 2, killedBy(SIGTERM), t0 + after);
    JobOutcome& outcome = policy.finish();
    REQUIRE(outcome.firstFailure);
    CHECK(outcome.firstFailure->rank == (crashWins ? 0 : 1));
    CHECK(outcome.exitCode == (crashWins ? 128 + SIGKILL : 1));
    // Every rank is counted once in the summary: the cause, those stopped, those that failed
    // on their own (the error exit the crash took the cause from is one of them).
    CHECK(1 + outcome.ranksStopped + static_cast<int>(outcome.alsoFailed.size()) == 3);
    CHECK(outcome.alsoFailed == (crashWins ? std::vector<int>{1} : std::vector<int>{}));
  }
}

TEST_CASE("a rank already dying when hvdrun stopped the others keeps its death its own whenever it is reaped",
          "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.dyingNow.insert(0);  // killed a moment ago; its peer was reaped first
  ranks.end(policy, 1, exited(1), t0);
  CHECK(ranks.got(0, SIGTERM));
  ranks.end(policy, 0, killedBy(SIGTERM), t0 + 2s);  // long after the window, by hvdrun's signal in name
  JobOutcome& outcome = policy.finish();
  REQUIRE(outcome.firstFailure);
  CHECK(outcome.firstFailure->rank == 0);
  CHECK(outcome.exitCode == 128 + SIGTERM);
}

TEST_CASE("a rank told to stop that ends with an error of its own is counted apart from those hvdrun stopped",
          "[unit][end]") {
  Recorded ranks(3);
  SupervisorOptions options = ranksOptions(3);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 0, exited(2), t0);
  ranks.end(policy, 1, exited(1), t0 + 20ms);             // its own error after the stop
  ranks.end(policy, 2, exited(128 + SIGTERM), t0 + 20ms);  // obeyed, the way a handler says so
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.firstFailure->rank == 0);
  CHECK(outcome.alsoFailed == std::vector<int>{1});
  CHECK(outcome.ranksStopped == 1);
}

TEST_CASE("a signal to hvdrun stops every rank and ends the job with 128 plus it, and a second SIGINT kills",
          "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  policy.signalReceived(SIGINT, t0);
  CHECK(ranks.got(0, SIGINT));
  CHECK(ranks.got(1, SIGINT));
  CHECK(policy.ending());
  CHECK(policy.nextDeadline() == t0 + 5000ms);  // the kill grace
  policy.signalReceived(SIGINT, t0 + 1s);
  CHECK(ranks.got(0, SIGKILL));
  // A rank's error exit after the interrupt is not a root cause.
  ranks.end(policy, 0, exited(1), t0 + 1s);
  ranks.end(policy, 1, killedBy(SIGKILL), t0 + 1s);
  JobOutcome& outcome = policy.finish();
  CHECK_FALSE(outcome.firstFailure);
  CHECK(outcome.interruptSignal == SIGINT);
  CHECK(outcome.exitCode == 130);
}

TEST_CASE("a preemption notice reaches every rank, raises the flag first, and stops nothing", "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  options.preemptSignal = SIGUSR2;
  bool raised = false;
  options.onPreempt = [&] { raised = !ranks.got(0, SIGUSR2); };  // before any rank hears it
  EndPolicy policy(options, ranks);
  policy.signalReceived(SIGUSR2, Clock::now());
  CHECK(raised);
  CHECK(ranks.got(1, SIGUSR2));
  CHECK_FALSE(policy.ending());
  CHECK(policy.outcome().preempted);
  CHECK(policy.outcome().noticePassedOn == SIGUSR2);
}

TEST_CASE("a failure blamed on a peer's going leaves that peer its own end, whose failure becomes the cause",
          "[unit][end]") {
  Recorded ranks(3);
  SupervisorOptions options = ranksOptions(3);
  options.peerGoneOf = [](int rank) -> std::optional<int> {
    if (rank == 2) return 0;  // rank 2's runtime: rank 0 went first
    return std::nullopt;
  };
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 2, exited(1), t0);
  CHECK(ranks.got(1, SIGTERM));
  CHECK_FALSE(ranks.got(0, SIGTERM));  // left to end by itself
  CHECK(policy.nextDeadline() == t0 + kOwnEndWindow);
  ranks.end(policy, 0, exited(7), t0 + 500ms);  // its own failure, after hvd's shutdown
  ranks.end(policy, 1, killedBy(SIGTERM), t0 + 500ms);
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.firstFailure->rank == 0);
  CHECK(outcome.exitCode == 7);
}

TEST_CASE("a peer left to end by itself is stopped like the others once its moment has passed", "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  options.peerGoneOf = [](int rank) -> std::optional<int> { return rank == 1 ? std::optional<int>(0) : std::nullopt; };
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 1, exited(1), t0);
  policy.onTime(t0 + kOwnEndWindow - 1ms);
  CHECK_FALSE(ranks.got(0, SIGTERM));
  policy.onTime(t0 + kOwnEndWindow);
  CHECK(ranks.got(0, SIGTERM));
  ranks.end(policy, 0, killedBy(SIGTERM), t0 + kOwnEndWindow + 5ms);
  CHECK(policy.finish().firstFailure->rank == 1);
}

TEST_CASE("ranks still running at the kill grace's end are killed", "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  options.killGrace = 300ms;
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 0, exited(5), t0);
  policy.onTime(t0 + 299ms);
  CHECK_FALSE(ranks.got(1, SIGKILL));
  policy.onTime(t0 + 300ms);
  CHECK(ranks.got(1, SIGKILL));
}

TEST_CASE("ranks that never reached the rendezvous by the start timeout fail the job with 124, named", "[unit][end]") {
  Recorded ranks(4);
  SupervisorOptions options = ranksOptions(4);
  options.readyRanks = [] { return std::set<int>{0, 2}; };
  EndPolicy policy(options, ranks);
  policy.startTimedOut(Clock::now());
  for (size_t p = 0; p < 4; ++p) CHECK(ranks.got(p, SIGTERM));
  for (size_t p = 0; p < 4; ++p) ranks.end(policy, p, killedBy(SIGTERM), Clock::now());
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.neverReady == std::vector<int>{1, 3});
  CHECK(outcome.exitCode == 124);
}

TEST_CASE("a program that never reaches the rendezvous is not held to the start timeout", "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  options.readyRanks = [] { return std::set<int>{}; };
  EndPolicy policy(options, ranks);
  policy.startTimedOut(Clock::now());
  CHECK(ranks.sent.empty());
  CHECK_FALSE(policy.ending());
}

TEST_CASE("a console whose reader went away stops a job that had not failed, after a grace, with SIGPIPE's 141",
          "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  policy.consoleClosed("stdout", t0);
  CHECK(ranks.sent.empty());
  CHECK(policy.nextDeadline() == t0 + EndPolicy::kBrokenPipeGrace);
  policy.onTime(t0 + EndPolicy::kBrokenPipeGrace);
  CHECK(ranks.got(0, SIGTERM));
  CHECK(ranks.got(1, SIGTERM));
  ranks.end(policy, 0, killedBy(SIGTERM), t0 + 600ms);
  ranks.end(policy, 1, killedBy(SIGTERM), t0 + 600ms);
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.consoleClosed == "stdout");
  CHECK(outcome.exitCode == 141);
  CHECK_FALSE(outcome.firstFailure);
}

TEST_CASE("a rank that fails by itself as the console's reader goes away is the root cause, not the broken pipe",
          "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  policy.consoleClosed("stdout", t0);     // its last line met the closed pipe ...
  ranks.end(policy, 1, exited(3), t0 + 2ms);  // ... and it exits 3 right after
  CHECK(ranks.got(0, SIGTERM));            // stopped for rank 1's failure
  policy.onTime(t0 + EndPolicy::kBrokenPipeGrace);
  ranks.end(policy, 0, killedBy(SIGTERM), t0 + 600ms);
  JobOutcome& outcome = policy.finish();
  REQUIRE(outcome.firstFailure);
  CHECK(outcome.firstFailure->rank == 1);
  CHECK(outcome.exitCode == 3);
  CHECK(outcome.interruptSignal == 0);
  CHECK(outcome.consoleClosed == "stdout");  // the report says so too
}

TEST_CASE("a rank already ended when hvdrun is told to stop is the root cause, whichever hvdrun hears of first",
          "[unit][end]") {
  for (int sig : {SIGTERM, SIGINT}) {
    INFO("hvdrun got signal " << sig);
    Recorded ranks(3);
    SupervisorOptions options = ranksOptions(3);
    EndPolicy policy(options, ranks);
    const auto t0 = Clock::now();
    ranks.dyingNow.insert(2);  // exited 3, not reaped yet
    policy.signalReceived(sig, t0);
    ranks.end(policy, 2, exited(3), t0 + 1ms);
    ranks.end(policy, 0, killedBy(sig), t0 + 1ms);
    ranks.end(policy, 1, exited(1), t0 + 1ms);  // its own error after the stop: not a cause
    JobOutcome& outcome = policy.finish();
    REQUIRE(outcome.firstFailure);
    CHECK(outcome.firstFailure->rank == 2);
    CHECK(outcome.exitCode == 3);
    CHECK(outcome.interruptSignal == sig);
  }
}

TEST_CASE("a rank that failed before hvdrun was told to stop keeps its exit code as the job's", "[unit][end]") {
  Recorded ranks(2);
  SupervisorOptions options = ranksOptions(2);
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 1, exited(4), t0);
  policy.signalReceived(SIGTERM, t0 + 100ms);  // a scheduler's stop during the kill grace
  ranks.end(policy, 0, killedBy(SIGTERM), t0 + 150ms);
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.firstFailure->rank == 1);
  CHECK(outcome.exitCode == 4);
  CHECK(outcome.interruptSignal == SIGTERM);
}

TEST_CASE("a host agent's report of a rank's failure that reaches hvdrun after its own stop is still the cause",
          "[unit][end]") {
  Recorded agents(2);
  SupervisorOptions options = ranksOptions(4);
  options.processes = SupervisorOptions::Processes::kHostAgents;
  agents.specs[0].agentRanks = {0, 1};
  agents.specs[1].agentRanks = {2, 3};
  EndPolicy policy(options, agents);
  const auto t0 = Clock::now();
  policy.signalReceived(SIGTERM, t0);
  RankFailure f;
  f.rank = 3;
  f.exitCode = 3;
  f.host = "node1";
  policy.agentRankFailed(1, f, t0 + 5ms);  // the agent reports only failures before its own stop
  agents.end(policy, 0, exited(143), t0 + 10ms);
  agents.end(policy, 1, exited(3), t0 + 10ms);
  JobOutcome& outcome = policy.finish();
  REQUIRE(outcome.firstFailure);
  CHECK(outcome.firstFailure->rank == 3);
  CHECK(outcome.exitCode == 3);
}

TEST_CASE("a frozen host agent is the job's failure as a lost agent, and its ssh's later end changes nothing",
          "[unit][end]") {
  Recorded agents(2);
  SupervisorOptions options = ranksOptions(4);
  options.processes = SupervisorOptions::Processes::kHostAgents;
  agents.specs[0].agentRanks = {0, 1};
  agents.specs[1].agentRanks = {2, 3};
  agents.specs[1].rank = 2;  // an agent stands as its first rank
  EndPolicy policy(options, agents);
  const auto t0 = Clock::now();
  policy.agentFrozen(1, 10, t0);
  CHECK(agents.got(0, SIGTERM));  // the other host is told to stop
  agents.end(policy, 0, exited(143), t0 + 10ms);
  agents.end(policy, 1, killedBy(SIGKILL), t0 + 2s);  // its ssh, once it was killed there
  JobOutcome& outcome = policy.finish();
  REQUIRE(outcome.firstFailure);
  CHECK(outcome.firstFailure->rank == 2);
  CHECK(outcome.firstFailure->launcherProcess);
  CHECK(outcome.firstFailure->agentSilentSeconds == 10);
  CHECK(outcome.exitCode == 255);
}

TEST_CASE("a parameter server job ends well when its chief exits 0 and the ranks left are stopped", "[unit][end]") {
  Recorded ranks(3);
  SupervisorOptions options = ranksOptions(3);
  options.coordinatorRank = 0;
  bool told = false;
  options.onCoordinatorDone = [&] { told = true; };
  EndPolicy policy(options, ranks);
  const auto t0 = Clock::now();
  ranks.end(policy, 0, exited(0), t0);
  CHECK(told);
  CHECK(ranks.got(1, SIGTERM));
  ranks.end(policy, 1, killedBy(SIGTERM), t0);
  ranks.end(policy, 2, killedBy(SIGTERM), t0);
  JobOutcome& outcome = policy.finish();
  CHECK(outcome.ranksStoppedAfterCoordinator == 2);
  CHECK(outcome.exitCode == 0);
}

TEST_CASE("an elastic job goes on without a failed rank when its world says so, and stops nothing", "[unit][end]") {
  Recorded ranks(3);
  SupervisorOptions options = ranksOptions(3);
  std::vector<int> told;
  options.rankEnded = [&](const std::vector<int>& which, const RankFailure* failure) {
    told.insert(told.end(), which.begin(), which.end());
    return SupervisorOptions::AfterRankEnd{.goesOn = failure != nullptr};
  };
  EndPolicy policy(options, ranks);
  ranks.end(policy, 1, exited(3), Clock::now());
  CHECK(told == std::vector<int>{1});
  CHECK(ranks.sent.empty());
  CHECK_FALSE(policy.ending());
  REQUIRE(policy.outcome().leftBehind.size() == 1);
  CHECK(policy.outcome().leftBehind.front().rank == 1);
  CHECK(policy.outcome().leftBehind.front().lastStderrLines == std::deque<std::string>{"last words of 1"});
}

TEST_CASE("a launcher hears the moment of hvdrun's own stop once, before its process is signalled, and not for "
          "notices or a rank's failure",
          "[unit][end]") {
  for (const char* why : {"SIGTERM", "broken pipe"}) {
    INFO(why);
    Recorded srun(1);
    SupervisorOptions options = ranksOptions(1);
    options.processes = SupervisorOptions::Processes::kLauncher;
    int calls = 0;
    size_t signalsSentThen = 99;
    options.onOwnStop = [&] {
      ++calls;
      signalsSentThen = srun.sent.size();
    };
    EndPolicy policy(options, srun);
    const auto t0 = Clock::now();
    policy.signalReceived(SIGUSR1, t0);  // a notice passed on is no stop
    CHECK(calls == 0);
    srun.sent.clear();
    if (std::string(why) == "SIGTERM") {
      policy.signalReceived(SIGTERM, t0);
      policy.signalReceived(SIGTERM, t0 + 10ms);
    } else {
      policy.consoleClosed("stdout", t0);
      policy.onTime(t0 + EndPolicy::kBrokenPipeGrace);
    }
    CHECK(calls == 1);
    CHECK(signalsSentThen == 0);
    CHECK(srun.got(0, SIGTERM));
  }
  Recorded srun(1);
  SupervisorOptions options = ranksOptions(1);
  options.processes = SupervisorOptions::Processes::kLauncher;
  int calls = 0;
  options.onOwnStop = [&] { ++calls; };
  EndPolicy policy(options, srun);
  srun.end(policy, 0, exited(3), Clock::now());
  policy.finish();
  CHECK(calls == 0);
}

}  // namespace hvd::cli
