// cli/supervise/end_policy.cc: the root cause, the stops and the exit code.
#include "cli/supervise/end_policy.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "cli/exit_code.h"

namespace hvd::cli {
namespace {

// Passed on to the ranks and nothing more (preemption notices): the job goes on, and a rank
// they end has failed, as it would have run alone.
bool isNotice(int sig) { return sig == SIGUSR1 || sig == SIGUSR2; }

}  // namespace

EndPolicy::EndPolicy(const SupervisorOptions& options, Processes& processes)
    : options_(options), processes_(processes) {}

EndPolicy::State& EndPolicy::state(size_t process) {
  while (states_.size() <= process) states_.emplace_back();
  return states_[process];
}

bool EndPolicy::unneeded(size_t process) const { return process < states_.size() && states_[process].unneeded; }

bool EndPolicy::ending() const {
  return outcome_.firstFailure || outcome_.interruptSignal != 0 || !outcome_.neverReady.empty() || killDeadline_ ||
         brokenPipeDeadline_;
}

void EndPolicy::send(size_t process, int sig) {
  // A rank a notice ends was not stopped by hvdrun: its end is its own, a failure.
  if (!isNotice(sig)) state(process).signalSent = sig;
  processes_.signal(process, sig);
}

void EndPolicy::stop(size_t process) {
  State& s = state(process);
  s.stoppedByUs = true;
  // Under load, a rank killed a moment ago (its sockets closed, so a peer failed and was
  // reaped first) may still be ending: the SIGTERM below must not pass for its cause.
  if (forkedRanks() && s.signalSent == 0) s.endingBeforeStop = processes_.dying(process);
  send(process, SIGTERM);
}

void EndPolicy::stopOthers() {
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (processes_.running(p) && !state(p).endingByItself) stop(p);
  }
}

void EndPolicy::signalAll(int sig, bool includeExited) {
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (processes_.pid(p) > 0 && (processes_.running(p) || includeExited)) send(p, sig);
  }
}

void EndPolicy::killAll(bool includeExited) { signalAll(SIGKILL, includeExited); }

void EndPolicy::armKill(Clock::time_point now) {
  if (!killDeadline_) killDeadline_ = now + options_.killGrace;
}

// hvdrun stops the job for reasons of its own (a signal it got, its console gone). A rank
// already dying then ended by itself, before the stop: whatever order hvdrun hears of the two
// in, that rank's failure is the job's root cause (noteFailure). A launcher's ranks report
// such ends themselves: the launcher is told the moment (onOwnStop) to tell those reports from
// the ends of ranks its stop killed.
void EndPolicy::noteEndingBeforeOwnStop() {
  if (options_.onOwnStop) options_.onOwnStop();
  if (!forkedRanks()) return;
  for (size_t p = 0; p < processes_.count(); ++p) {
    State& s = state(p);
    if (processes_.running(p) && s.signalSent == 0 && !s.endingBeforeStop) s.endingBeforeStop = processes_.dying(p);
  }
}

void EndPolicy::signalReceived(int sig, Clock::time_point now) {
  if (sig == SIGINT && outcome_.interruptSignal == SIGINT) {
    signalAll(SIGKILL);  // the second Ctrl-C: the user means it
    return;
  }
  if (sig == options_.preemptSignal && !outcome_.preempted) {
    outcome_.preempted = true;
    if (options_.onPreempt) options_.onPreempt();  // the flag is up before ranks hear the signal
    if (options_.preemptGrace) preemptDeadline_ = now + *options_.preemptGrace;
  }
  if (!isNotice(sig) && outcome_.interruptSignal == 0) noteEndingBeforeOwnStop();
  signalAll(sig);
  if (isNotice(sig)) {
    outcome_.noticePassedOn = sig;
    return;
  }
  if (outcome_.interruptSignal == 0) outcome_.interruptSignal = sig;
  for (size_t p = 0; p < processes_.count(); ++p) state(p).stoppedByUs |= processes_.running(p);
  // A scheduler follows SIGTERM with SIGKILL after its own grace: stop ranks before. And one
  // Ctrl-C must end the job too: a Python rank blocked in a collective raises its
  // KeyboardInterrupt only once the call returns, which its waiting peers never let it.
  armKill(now);
}

// As a program writing into that pipe would be killed by SIGPIPE at its next write, and as
// mpirun aborts, the job is stopped (SIGTERM, then the kill grace), never left running on
// unseen: after kBrokenPipeGrace, so that a rank already on its way out (the line that met the
// closed pipe its last words, a failure right after) ends as it would have, and a failure of
// its own is the job's root cause rather than the pipe.
void EndPolicy::consoleClosed(const std::string& name, Clock::time_point now) {
  if (outcome_.consoleClosed.empty()) outcome_.consoleClosed = name;
  if (outcome_.interruptSignal != 0 || outcome_.firstFailure || !outcome_.neverReady.empty()) return;
  if (!brokenPipeDeadline_) brokenPipeDeadline_ = now + kBrokenPipeGrace;
}

void EndPolicy::stopForBrokenPipe(Clock::time_point now) {
  brokenPipeDeadline_.reset();
  bool anyRunning = false;
  for (size_t p = 0; p < processes_.count(); ++p) anyRunning |= processes_.running(p);
  if (!anyRunning || outcome_.interruptSignal != 0 || outcome_.firstFailure || !outcome_.neverReady.empty()) return;
  noteEndingBeforeOwnStop();
  outcome_.interruptSignal = SIGPIPE;  // the exit code a program killed by it would give: 141
  signalAll(SIGTERM);                  // not SIGPIPE: Python ignores that one
  for (size_t p = 0; p < processes_.count(); ++p) state(p).stoppedByUs |= processes_.running(p);
  armKill(now);
}

void EndPolicy::startTimedOut(Clock::time_point now) {
  if (!options_.readyRanks || outcome_.firstFailure || outcome_.interruptSignal != 0) return;
  std::set<int> ready = options_.readyRanks();
  if (ready.empty()) return;  // a program that never uses the runtime is not held to it
  std::vector<int> missing;   // an elastic job's ranks that ended before they got there are not awaited
  for (int r = 0; r < options_.rankCount; ++r) {
    if (!ready.count(r) && !departed_.count(r)) missing.push_back(r);
  }
  if (missing.empty()) return;
  outcome_.neverReady = std::move(missing);
  outcome_.exitCode = static_cast<int>(ExitCode::kTimeout);
  stopOthers();
  killDeadline_ = now + options_.killGrace;
}

void EndPolicy::preemptGraceOver(Clock::time_point now) {
  preemptDeadline_.reset();
  for (size_t p = 0; p < processes_.count(); ++p) outcome_.ranksStoppedAfterPreemption += processes_.running(p) ? 1 : 0;
  stopOthers();
  armKill(now);
}

void EndPolicy::onTime(Clock::time_point now) {
  if (ownEndDeadline_ && now >= *ownEndDeadline_) stopSlowEnders();  // before a SIGKILL due now
  if (killDeadline_ && now >= *killDeadline_) {
    signalAll(SIGKILL);
    killDeadline_.reset();
  }
  if (unneededKillDeadline_ && now >= *unneededKillDeadline_) {
    unneededKillDeadline_.reset();
    for (size_t p = 0; p < processes_.count(); ++p) {
      if (state(p).unneeded && processes_.running(p)) send(p, SIGKILL);
    }
  }
  if (preemptDeadline_ && now >= *preemptDeadline_) preemptGraceOver(now);
  if (brokenPipeDeadline_ && now >= *brokenPipeDeadline_) stopForBrokenPipe(now);
}

std::optional<EndPolicy::Clock::time_point> EndPolicy::nextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& deadline : {killDeadline_, ownEndDeadline_, unneededKillDeadline_, preemptDeadline_,
                               brokenPipeDeadline_}) {
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  return next;
}

// Time hvdrun itself was stopped (Ctrl-Z) does not count, but for the preemption grace,
// which is the scheduler's clock.
void EndPolicy::shiftDeadlines(Clock::duration by) {
  for (auto* deadline : {&killDeadline_, &ownEndDeadline_, &unneededKillDeadline_, &brokenPipeDeadline_}) {
    if (*deadline) **deadline += by;
  }
}

// A process ended. A rank that died of a signal hvdrun never sent it (a crash, SIGKILL by
// the OOM killer) is the cause over a rank that merely exited with an error; such an error is
// typically a survivor reacting to the crash, and it may even be reaped first (a dying
// process's sockets close before its parent is told), so a crash reaped within kCauseWindow
// of the first failure still takes over.
void EndPolicy::processEnded(size_t process, int status, Clock::time_point now) {
  State& s = state(process);
  const RankProcess& spec = processes_.spec(process);
  const pid_t pid = processes_.pid(process);
  // TensorFlow's rule for ParameterServerStrategy: the job is done when its chief (the
  // coordinator) is; ps servers and workers would wait in server.join() forever.
  if (options_.coordinatorRank && spec.rank == *options_.coordinatorRank && WIFEXITED(status) &&
      WEXITSTATUS(status) == 0 && !outcome_.firstFailure && outcome_.interruptSignal == 0) {
    if (options_.onCoordinatorDone) options_.onCoordinatorDone();
    for (size_t p = 0; p < processes_.count(); ++p) outcome_.ranksStoppedAfterCoordinator += processes_.running(p) ? 1 : 0;
    if (outcome_.ranksStoppedAfterCoordinator > 0) {
      stopOthers();
      killDeadline_ = now + options_.killGrace;
    }
    return;
  }
  if (hostAgents()) {
    agentEnded(process, status, now);
    return;
  }
  if (s.unneeded) {
    unneededEnded();
    return;
  }
  s.endedCleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.signalSent == 0;
  if (s.endedCleanly && options_.onCleanEnd) options_.onCleanEnd(spec.rank);
  if (s.endingByItself) {
    s.endingByItself = false;
    const bool failedByItself = WIFSIGNALED(status) || WEXITSTATUS(status) != 0;
    if (failedByItself) takeOverCause(failureOf(process, pid, status));
    if (s.endedCleanly && outcome_.firstFailure && awaitedRank_ == spec.rank) {
      outcome_.firstFailure->peerEndedCleanly = spec.rank;
    }
    return;
  }
  const bool crashed = WIFSIGNALED(status) && (WTERMSIG(status) != s.signalSent || s.endingBeforeStop);
  // Ended by itself before hvdrun's stop reached it: an error exit is its own too.
  const bool failed = crashed || (WIFEXITED(status) && WEXITSTATUS(status) != 0 && (!s.stoppedByUs || s.endingBeforeStop));
  if (options_.rankEnded && s.signalSent == 0) {
    RankFailure f = failureOf(process, pid, status);
    f.lastStderrLines = processes_.lastStderr(process);
    if (elasticGoesOnWithout({spec.rank}, failed ? &f : nullptr, now)) return;
  }
  // Told to stop, but it ended with an error of its own (a peer's death seen first, 1 from
  // Python's traceback): not one hvdrun stopped. 128+SIGTERM is how a program that handles
  // SIGTERM says it obeyed.
  if (s.stoppedByUs && WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 128 + s.signalSent &&
      outcome_.interruptSignal == 0) {
    s.stoppedByUs = false;
    outcome_.alsoFailed.push_back(spec.rank);
  }
  if (!failed) return;
  if (noteFailure(failureOf(process, pid, status), crashed, s.endingBeforeStop, now, s.endingBeforeStop)) {
    s.stoppedByUs = false;  // the cause, not a rank hvdrun stopped
  }
}

RankFailure EndPolicy::failureOf(size_t process, pid_t pid, int status) const {
  const RankProcess& spec = processes_.spec(process);
  RankFailure f;
  f.rank = spec.rank;
  f.host = spec.host;
  f.pid = pid;
  f.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  f.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  f.when = nowIso8601();
  f.launcherProcess = hostAgents();
  return f;
}

// A failure becomes the job's root cause when it is the first, or a crash soon after a first
// failure that was only an error exit (or any time after it, for a rank that was already
// dying when hvdrun stopped the others: its peers saw its sockets close and exited before the
// kernel told hvdrun it had died); the first one stops every other rank. True when it became
// the root cause.
bool EndPolicy::noteFailure(RankFailure f, bool crashed, bool endedBeforeStop, Clock::time_point now,
                            bool beforeOwnStop) {
  // Once hvdrun stopped the job itself, only a failure that came before the stop is a cause.
  if (outcome_.interruptSignal != 0 && !beforeOwnStop) return false;
  if (outcome_.firstFailure) {
    const bool firstWasError = outcome_.firstFailure->signal == 0;
    const bool soon = now - firstFailureAt_ < kCauseWindow || endedBeforeStop;
    if (!(crashed && firstWasError && soon)) return false;
  }
  const bool first = !outcome_.firstFailure;
  replaceCause(std::move(f));
  if (first && outcome_.interruptSignal == 0) {
    firstFailureAt_ = now;
    if (!crashed) awaitRankGone(outcome_.firstFailure->rank, now);
    noteStoppedRanks();  // before stopOthers() wakes them
    stopOthers();
    killDeadline_ = now + options_.killGrace;
  } else if (first) {
    firstFailureAt_ = now;  // every other rank is being stopped already
  }
  return true;
}

// The first failure was an error exit that its runtime blamed on another rank's going (a peer
// hears of a death, or of hvd.shutdown() in a SIGTERM handler, as soon as it happens, and may
// be reaped long before the dying rank ends). Follows such reports to the rank that went
// first; if it still runs and hvdrun never signalled it, it is left to end by itself for
// kOwnEndWindow (stopOthers() passes it by).
void EndPolicy::awaitRankGone(int failed, Clock::time_point now) {
  if (!options_.peerGoneOf || (!forkedRanks() && !hostAgents())) return;
  const int went = wentFirst(failed);
  if (went == failed) return;
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (forkedRanks() && processes_.spec(p).rank == went && state(p).endedCleanly) {
      outcome_.firstFailure->peerEndedCleanly = went;
    }
  }
  if (hostAgents() && cleanEnds_.count(went)) outcome_.firstFailure->peerEndedCleanly = went;
  for (size_t p = 0; p < processes_.count(); ++p) {
    const auto& own = processes_.spec(p).agentRanks;
    const bool runsIt = hostAgents() ? std::find(own.begin(), own.end(), went) != own.end()
                                     : processes_.spec(p).rank == went;
    if (!runsIt || !processes_.running(p) || state(p).signalSent != 0) continue;
    state(p).endingByItself = true;
    awaitedRank_ = went;
    ownEndDeadline_ = now + std::min<std::chrono::milliseconds>(kOwnEndWindow, options_.killGrace);
  }
}

// The rank whose going a failed rank's runtime blamed, followed along such reports to the one
// that went first (`failed` itself when it blamed none).
int EndPolicy::wentFirst(int failed) const {
  std::set<int> seen{failed};
  int went = failed;
  while (auto next = options_.peerGoneOf(went)) {
    if (!seen.insert(*next).second) break;
    went = *next;
  }
  return went;
}

// The rank awaitRankGone found ended with a failure: it is the job's cause, unless it only
// exited with an error after a crash took the cause over (a rank dying when hvdrun stopped
// the others), or it has since said whose going failed it. Such a rank was awaited because it
// had not said so yet; reaped late, a peer of the dying rank can name it first.
void EndPolicy::takeOverCause(RankFailure f) {
  if (outcome_.interruptSignal != 0) return;
  if (outcome_.firstFailure && outcome_.firstFailure->signal != 0 && f.signal == 0) return;
  if (options_.peerGoneOf && options_.peerGoneOf(f.rank)) return;
  replaceCause(std::move(f));
}

// The cause a later failure takes over from stays in the summary as a rank that failed on
// its own (it was neither stopped by hvdrun nor, any more, the cause): every rank is
// counted once.
void EndPolicy::replaceCause(RankFailure f) {
  auto& also = outcome_.alsoFailed;
  if (outcome_.firstFailure && outcome_.firstFailure->rank != f.rank &&
      std::find(also.begin(), also.end(), outcome_.firstFailure->rank) == also.end()) {
    also.push_back(outcome_.firstFailure->rank);
  }
  also.erase(std::remove(also.begin(), also.end(), f.rank), also.end());
  outcome_.firstFailure = std::move(f);
  if (options_.onFailure) options_.onFailure(*outcome_.firstFailure);
}

// kOwnEndWindow passed: a rank still ending by itself is stopped like the others, and, as
// there, one already dying (slow to end on a loaded machine) keeps its death its own.
void EndPolicy::stopSlowEnders() {
  ownEndDeadline_.reset();
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (!state(p).endingByItself || !processes_.running(p)) continue;
    state(p).endingByItself = false;
    stop(p);
  }
}

// A host agent ended. Its ranks' failures came as records; one that ends badly without having
// reported one (ssh could not connect or lost the host, the agent could not start its ranks)
// is itself the cause.
void EndPolicy::agentEnded(size_t process, int status, Clock::time_point now) {
  State& s = state(process);
  if (s.unneeded) {
    unneededEnded();
    return;
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok || outcome_.firstFailure || s.stoppedByUs) return;
  (void)agentLost(process, failureOf(process, processes_.pid(process), status), now);
}

void EndPolicy::agentFrozen(size_t process, int seconds, Clock::time_point now) {
  State& s = state(process);
  if (s.unneeded) return;
  // A lost agent's code, as ssh reports a connection lost.
  RankFailure f = failureOf(process, processes_.pid(process), 255 << 8);
  f.agentSilentSeconds = seconds;
  if (agentLost(process, std::move(f), now)) s.stoppedByUs = false;
}

// An elastic job goes on without a host whose agent (or ssh connection) was lost, while it
// can do without every rank the agent ran. They ended together: one decision, one new world
// (one reset, as Horovod counts a host's loss), one line. Otherwise the loss is a failure;
// true when it became the job's cause.
bool EndPolicy::agentLost(size_t process, RankFailure f, Clock::time_point now) {
  if (options_.rankEnded != nullptr) {
    std::vector<int> lost;
    for (int rank : processes_.spec(process).agentRanks) {
      if (!departed_.count(rank)) lost.push_back(rank);
    }
    if (lost.empty()) return false;
    RankFailure first = f;
    first.rank = lost.front();
    if (elasticGoesOnWithout(lost, &first, now)) return false;
  }
  return noteFailure(std::move(f), false, false, now);
}

void EndPolicy::agentRankFailed(size_t process, RankFailure failure, Clock::time_point now) {
  if (unneededRanks_.count(failure.rank)) return;  // raced hvdrun's stop: waiting was all it did
  if (options_.rankEnded) {
    failure.lastStderrLines = processes_.labelledStderr(failure.rank);
    if (elasticGoesOnWithout({failure.rank}, &failure, now)) return;
  }
  // The rank awaitRankGone waits for, failing by itself on its agent: the cause.
  if (state(process).endingByItself && awaitedRank_ == failure.rank) {
    takeOverCause(std::move(failure));
    return;
  }
  // An agent reports only a failure that came before any stop reached its rank (after one,
  // its own policy notes none): one that reaches hvdrun after hvdrun's own stop is the
  // rank's own all the same.
  const bool crashed = failure.signal != 0;
  noteFailure(std::move(failure), crashed, false, now, /*beforeOwnStop=*/true);
}

void EndPolicy::agentRankEnded(int rank, Clock::time_point now) {
  cleanEnds_.insert(rank);
  // Heard after a peer's failure that blamed it (the hosts' records race): it returned early
  // all the same.
  auto& first = outcome_.firstFailure;
  if (first && first->peerEndedCleanly < 0 && options_.peerGoneOf && first->rank != rank && wentFirst(first->rank) == rank) {
    first->peerEndedCleanly = rank;
  }
  (void)elasticGoesOnWithout({rank}, nullptr, now);
}

void EndPolicy::startFailed(const RankFailure& failure, Clock::time_point now) {
  (void)elasticGoesOnWithout({failure.rank}, &failure, now);
}

// Elastic training: ranks ended by themselves (a host agent's record, or the agent's own end:
// all of its ranks at once); rankEnded decides. True when the job goes on without them.
bool EndPolicy::elasticGoesOnWithout(const std::vector<int>& ranks, const RankFailure* failure, Clock::time_point now) {
  if (!options_.rankEnded || outcome_.firstFailure || outcome_.interruptSignal != 0 || !outcome_.neverReady.empty()) {
    return false;
  }
  departed_.insert(ranks.begin(), ranks.end());
  auto after = options_.rankEnded(ranks, failure);
  stopUnneeded(after.stop, std::move(after.onceStopped), now);
  if (!after.goesOn) return false;
  if (failure != nullptr) {
    for (int rank : ranks) {
      outcome_.leftBehind.push_back(*failure);
      outcome_.leftBehind.back().rank = rank;
    }
    failFrozen(/*onlyLong=*/false, now);
  }
  return true;
}

void EndPolicy::lookForFrozen(Clock::time_point now) {
  if (!outcome_.firstFailure && outcome_.interruptSignal == 0 && !killDeadline_) failFrozen(/*onlyLong=*/true, now);
}

// Elastic training, after a failure: a rank frozen meanwhile (its peers timed out waiting for
// it, and one of them failed) would hold up the next world until the elastic timeout. It
// fails too: killed, and the job goes on without it; so does one frozen for frozenFails,
// checked every second. Ranks forked here only (state T in /proc), and not while hvdrun holds
// them itself (Ctrl-Z).
void EndPolicy::failFrozen(bool onlyLong, Clock::time_point now) {
  if (!forkedRanks() || !options_.rankEnded || processes_.held()) return;
  std::set<size_t> candidates;
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (processes_.running(p) && state(p).signalSent == 0 && !departed_.count(processes_.spec(p).rank)) {
      candidates.insert(p);
    }
  }
  if (candidates.empty()) return;
  const std::set<size_t> frozen = processes_.frozen(candidates);
  std::map<int, Clock::time_point> since;
  for (size_t p : frozen) {
    const int rank = processes_.spec(p).rank;
    auto seen = frozenSince_.find(rank);
    since[rank] = seen != frozenSince_.end() ? seen->second : now;
  }
  frozenSince_ = since;
  for (size_t p : frozen) {
    const int rank = processes_.spec(p).rank;
    if (onlyLong && (!options_.frozenFails || now - since[rank] < *options_.frozenFails)) continue;
    RankFailure f;
    f.rank = rank;
    f.host = processes_.spec(p).host;
    f.pid = processes_.pid(p);
    f.signal = SIGKILL;
    f.frozenSeconds = onlyLong ? static_cast<int>(std::max<long long>(options_.frozenFails->count() / 1000, 1)) : 0;
    f.when = nowIso8601();
    send(p, SIGKILL);
    if (!elasticGoesOnWithout({f.rank}, &f, now)) noteFailure(f, true, false, now);
  }
}

// A host agent is stopped when it runs no other rank the job still needs; one keeping some
// stops the others itself, as unneeded (agent_protocol.h "stop <rank>"), and its connection
// stays.
void EndPolicy::stopUnneeded(const std::vector<int>& ranks, std::function<void()> onceStopped,
                             Clock::time_point now) {
  if (ranks.empty()) return;
  unneededRanks_.insert(ranks.begin(), ranks.end());
  departed_.insert(ranks.begin(), ranks.end());  // not awaited at the rendezvous either
  if (onceStopped) onceUnneededStopped_ = std::move(onceStopped);
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (!processes_.running(p) || state(p).unneeded) continue;
    const RankProcess& spec = processes_.spec(p);
    const std::vector<int>& its = spec.agentRanks.empty() ? std::vector<int>{spec.rank} : spec.agentRanks;
    if (std::all_of(its.begin(), its.end(), [&](int rank) { return unneededRanks_.count(rank) > 0; })) {
      state(p).unneeded = true;
      stop(p);
      continue;
    }
    if (processes_.beforeJobsSent()) continue;
    for (int rank : its) {
      if (!unneededRanks_.count(rank) || state(p).stopsOrdered.count(rank)) continue;
      if (processes_.orderStop(p, rank)) state(p).stopsOrdered.insert(rank);
    }
  }
  if (!unneededKillDeadline_) unneededKillDeadline_ = now + options_.killGrace;
  unneededEnded();  // none may have been running
}

void EndPolicy::unneededEnded() {
  if (!onceUnneededStopped_) return;
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (state(p).unneeded && processes_.running(p)) return;
  }
  auto call = std::move(onceUnneededStopped_);
  onceUnneededStopped_ = nullptr;
  call();
}

// A rank frozen by SIGSTOP, Ctrl-Z in its own terminal or a debugger stalls its peers until
// their timeout, and the first of them to give up looks like the cause: name it. Only ranks
// this process started (a host agent's are looked at by that agent).
void EndPolicy::noteStoppedRanks() {
  if (!forkedRanks()) return;
  std::set<size_t> candidates;
  for (size_t p = 0; p < processes_.count(); ++p) {
    if (processes_.running(p) && processes_.spec(p).rank != outcome_.firstFailure->rank) candidates.insert(p);
  }
  if (candidates.empty()) return;
  std::set<int> stopped;
  for (size_t p : processes_.frozen(candidates)) stopped.insert(processes_.spec(p).rank);
  outcome_.stoppedWhenFailed.assign(stopped.begin(), stopped.end());
}

JobOutcome& EndPolicy::finish() {
  // The failure's last stderr lines are only complete once its pipe has drained.
  if (outcome_.firstFailure && hostAgents() && !outcome_.firstFailure->launcherProcess) {
    outcome_.firstFailure->lastStderrLines = processes_.labelledStderr(outcome_.firstFailure->rank);
  } else if (outcome_.firstFailure) {
    for (size_t p = 0; p < processes_.count(); ++p) {
      if (processes_.spec(p).rank == outcome_.firstFailure->rank) {
        outcome_.firstFailure->lastStderrLines = processes_.lastStderr(p);
      }
    }
  }
  int stopped = 0;
  for (size_t p = 0; p < processes_.count(); ++p) stopped += state(p).stoppedByUs ? 1 : 0;
  outcome_.ranksStopped = stopped;
  // A rank that failed before hvdrun stopped the job itself is its root cause, whatever
  // stopped it then (a signal to hvdrun, its console gone).
  if (outcome_.firstFailure) {
    const RankFailure& f = *outcome_.firstFailure;
    outcome_.exitCode = f.signal != 0 ? 128 + f.signal : f.exitCode;
  } else if (outcome_.interruptSignal != 0) {
    outcome_.exitCode = 128 + outcome_.interruptSignal;
  } else if (!outcome_.neverReady.empty()) {
    outcome_.exitCode = static_cast<int>(ExitCode::kTimeout);
  }
  return outcome_;
}

}  // namespace hvd::cli
