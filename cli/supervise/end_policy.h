// cli/supervise/end_policy.h: who ended a job, and what hvdrun does about each end.
// Fed what happens (a process ended, a host agent reported a rank's failure, hvdrun got a
// signal, the console's reader went away, a deadline passed), it keeps the job's outcome
// and tells the processes to stop through an interface (Processes), so it is tested with
// ends and times alone, no processes. The rules:
//   - the first failure is the root cause and stops every other process (SIGTERM, then
//     SIGKILL after the kill grace); a crash (a signal hvdrun never sent) within
//     kCauseWindow of a first failure that was only an error exit takes the cause over;
//   - a failure whose runtime blamed another rank's going leaves that rank kOwnEndWindow
//     to end by itself, and its own failure is then the cause;
//   - hvdrun's own stop (a signal it received; its console gone, after a short grace) ends
//     the job with 128+sig, but a rank that failed by itself before that stop stays the root
//     cause, whichever of the two hvdrun hears of first;
//   - elastic training: rankEnded decides whether the job goes on without a rank.
// Single-threaded: the supervisor's loop calls it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/supervise/supervision.h"

namespace hvd::cli {

class EndPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  // What the policy may learn of and do to the job's processes (indices 0 .. count()-1, a
  // process added later gets the next index): the supervisor over real ones, tests over a
  // record.
  class Processes {
   public:
    virtual ~Processes() = default;
    virtual size_t count() const = 0;
    virtual const RankProcess& spec(size_t process) const = 0;
    virtual pid_t pid(size_t process) const = 0;
    virtual bool running(size_t process) const = 0;
    // Sends sig: to its process group, or through a host agent's connection. Does not block.
    virtual void signal(size_t process, int sig) = 0;
    // A host agent keeping other ranks: it is to stop `rank`, which the job no longer needs.
    // False when the order cannot be sent (no connection to it now).
    virtual bool orderStop(size_t process, int rank) = 0;
    // Whether the process is already dying (it was killed a moment ago).
    virtual bool dying(size_t process) const = 0;
    // Of these processes (ranks hvdrun forked), those with a stopped process (state T) in
    // their session.
    virtual std::set<size_t> frozen(const std::set<size_t>& processes) const = 0;
    // A host agent's hello phase: until every agent has said hello (or failed to), signals
    // go to the processes themselves, and no notice goes anywhere.
    virtual bool beforeJobsSent() const = 0;
    // hvdrun holds the ranks itself (Ctrl-Z): stopped ranks are then not frozen.
    virtual bool held() const = 0;
    // Its last stderr lines (a rank's own; a host agent's records bring their rank's).
    virtual std::deque<std::string> lastStderr(size_t process) const = 0;
    virtual std::deque<std::string> labelledStderr(int rank) const = 0;
  };

  EndPolicy(const SupervisorOptions& options, Processes& processes);

  // hvdrun received sig (not SIGCHLD, SIGTSTP or SIGCONT): it is passed to every process; a
  // notice (SIGUSR1, SIGUSR2) goes on to them and nothing more, any other stops the job. A
  // second SIGINT kills.
  void signalReceived(int sig, Clock::time_point now);
  // The console's reader went away (EPIPE on `name`, "stdout" or "stderr"): the job stops
  // as a program writing there would, with SIGPIPE's 141, kBrokenPipeGrace later, unless a
  // rank fails by itself meanwhile (or did before): that failure is the root cause.
  void consoleClosed(const std::string& name, Clock::time_point now);
  // A process ended with this waitpid status. A host agent's end (drained first by the
  // caller) is passed on only once the agents' hello phase is over.
  void processEnded(size_t process, int status, Clock::time_point now);
  // A host agent's record: its rank failed, or (exit 0, by itself) ended.
  void agentRankFailed(size_t process, RankFailure failure, Clock::time_point now);
  // kHostAgents: agent `process` said nothing for `seconds` (agent_links.h): frozen, the
  // job's failure as a lost agent is (exit 255), or in an elastic job one that goes on
  // without its ranks when it can.
  void agentFrozen(size_t process, int seconds, Clock::time_point now);
  void agentRankEnded(int rank, Clock::time_point now);
  // A process the supervisor could not start while the job ran (elastic growth).
  void startFailed(const RankFailure& failure, Clock::time_point now);
  // SIGKILL to every process now (includeExited: also those reaped, whose groups may hold
  // leftover children): nothing could start, or what is left holds the output pipes.
  void killAll(bool includeExited = false);
  // Elastic training: ranks to stop that are not failures, then onceStopped.
  void stopUnneeded(const std::vector<int>& ranks, std::function<void()> onceStopped, Clock::time_point now);
  // --start-timeout passed: ranks that have not reached the rendezvous fail the job (124).
  void startTimedOut(Clock::time_point now);
  // --preempt-grace passed after the preemption notice: ranks still running are stopped.
  void preemptGraceOver(Clock::time_point now);
  // Elastic training, every second: a rank frozen as long as frozenFails fails.
  void lookForFrozen(Clock::time_point now);
  // Deadlines: call at nextDeadline() (or later); shifted by a time hvdrun was stopped.
  void onTime(Clock::time_point now);
  std::optional<Clock::time_point> nextDeadline() const;
  void shiftDeadlines(Clock::duration by);
  std::optional<Clock::time_point> preemptDeadline() const { return preemptDeadline_; }

  // Whether the job is ending (a failure, an interrupt, a start timeout, a kill pending):
  // no rank is added then.
  bool ending() const;
  bool interrupted() const { return outcome_.interruptSignal != 0; }
  // A process stopped as one the job no longer needs: its end is nothing.
  bool unneeded(size_t process) const;

  // Every process has ended and been reaped: the outcome, its exit code decided.
  JobOutcome& finish();
  JobOutcome& outcome() { return outcome_; }

  // A crash reaped this soon after a first failure that was an error exit takes over.
  static constexpr std::chrono::milliseconds kCauseWindow{250};
  // How long ranks go on after the console's reader went away, before hvdrun stops them.
  static constexpr std::chrono::milliseconds kBrokenPipeGrace{500};

 private:
  struct State {
    bool stoppedByUs = false;
    int signalSent = 0;  // the last signal hvdrun sent its group (not a notice)
    // It was already dying when hvdrun told it to stop: its signal is not hvdrun's.
    bool endingBeforeStop = false;
    // The rank whose going failed the first failing rank: not told to stop until
    // kOwnEndWindow has passed, so its end is its own.
    bool endingByItself = false;
    bool endedCleanly = false;  // exited 0 by itself
    bool unneeded = false;      // stopped as one an elastic job no longer needs
    std::set<int> stopsOrdered;  // a host agent: its ranks it was told to stop
  };
  State& state(size_t process);
  bool hostAgents() const { return options_.processes == SupervisorOptions::Processes::kHostAgents; }
  bool forkedRanks() const { return options_.processes == SupervisorOptions::Processes::kRanks; }

  void send(size_t process, int sig);
  void stop(size_t process);
  void stopOthers();
  void signalAll(int sig, bool includeExited = false);
  void armKill(Clock::time_point now);
  RankFailure failureOf(size_t process, pid_t pid, int status) const;
  bool noteFailure(RankFailure f, bool crashed, bool endedBeforeStop, Clock::time_point now,
                   bool beforeOwnStop = false);
  void noteEndingBeforeOwnStop();
  void stopForBrokenPipe(Clock::time_point now);
  void awaitRankGone(int failed, Clock::time_point now);
  int wentFirst(int failed) const;
  void takeOverCause(RankFailure f);
  void replaceCause(RankFailure f);
  bool agentLost(size_t process, RankFailure f, Clock::time_point now);
  void stopSlowEnders();
  void agentEnded(size_t process, int status, Clock::time_point now);
  bool elasticGoesOnWithout(const std::vector<int>& ranks, const RankFailure* failure, Clock::time_point now);
  void failFrozen(bool onlyLong, Clock::time_point now);
  void unneededEnded();
  void noteStoppedRanks();

  const SupervisorOptions& options_;
  Processes& processes_;
  std::deque<State> states_;  // by process
  JobOutcome outcome_;
  Clock::time_point firstFailureAt_{};
  std::set<int> departed_;  // elastic training: ranks that ended by themselves
  std::set<int> unneededRanks_;  // and ranks stopped as no longer needed (stopUnneeded)
  std::function<void()> onceUnneededStopped_;
  std::optional<Clock::time_point> unneededKillDeadline_;  // SIGKILL for those still running
  std::optional<Clock::time_point> killDeadline_;          // SIGKILL for whatever still runs then
  std::optional<Clock::time_point> ownEndDeadline_;        // awaitRankGone's rank is stopped then
  std::optional<Clock::time_point> preemptDeadline_;       // set by the preemption signal with a grace
  std::optional<Clock::time_point> brokenPipeDeadline_;    // the console's reader went away: stop then
  std::optional<int> awaitedRank_;  // the rank awaitRankGone leaves to end by itself
  std::set<int> cleanEnds_;         // ranks host agents said exited 0 by themselves
  std::map<int, Clock::time_point> frozenSince_;  // ranks found frozen, since when
};

}  // namespace hvd::cli
