// cli/supervise/agent_links.cc: hellos, jobs, orders, records and forwarded stdin.
#include "cli/supervise/agent_links.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {
namespace {

bool isNotice(int sig) { return sig == SIGUSR1 || sig == SIGUSR2; }

}  // namespace

AgentLinks::AgentLinks(const SupervisorOptions& options, EndPolicy::Processes& processes, EndPolicy& policy,
                       OutputRouter& router)
    : options_(options), processes_(processes), policy_(policy), router_(router) {}

void AgentLinks::findStdinRank() {
  if (const auto& forwarding = options_.stdinForwarding) {
    for (size_t p = 0; p < processes_.count(); ++p) {
      const auto& served = processes_.spec(p).agentRanks;
      const bool runsIt = hostAgents() ? std::count(served.begin(), served.end(), forwarding->rank) > 0
                                       : processes_.spec(p).rank == forwarding->rank;
      if (runsIt) stdinTo_ = p;
    }
    if (hostAgents()) stdinSender_.emplace(forwarding->fd);
  }
}

AgentLinks::~AgentLinks() {
  for (size_t p = 0; p < links_.size(); ++p) close(p);
}

AgentLinks::Link& AgentLinks::link(size_t p) {
  if (links_.size() <= p) links_.resize(p + 1);
  return links_[p];
}

bool AgentLinks::holdingInput() const { return hostAgents() && !agentsGreeted_ && !helloFailed_; }

bool AgentLinks::wantsStdinPipe(size_t p) const {
  return processes_.spec(p).agentInput.has_value() || (stdinTo_ == p && !hostAgents());
}

void AgentLinks::started(size_t p, int stdinFd) {
  if (stdinFd < 0) return;
  if (stdinTo_ == p && !hostAgents()) {
    // A host agent's rank that reads the stdin hvdrun forwards: the feeder fills its pipe.
    stdinFeeder_ = std::make_unique<StdinFeeder>(options_.stdinForwarding->fd, stdinFd);
    return;
  }
  ::fcntl(stdinFd, F_SETFL, O_NONBLOCK);  // a host that stops reading must not stop hvdrun
  Link& l = link(p);
  l.inFd = stdinFd;
  l.pendingInput = processes_.spec(p).agentInput.value_or("");
  if (!holdingInput()) write(p);
}

void AgentLinks::ended(size_t p, int status) {
  close(p);
  Link& l = link(p);
  l.ended = true;
  l.endStatus = status;
}

void AgentLinks::startHelloPhase(Clock::time_point now) {
  if (holdingInput()) helloDeadline_ = now + options_.agentHelloTimeout;
}

// The hello phase ends when every agent has said hello or ended, or at its deadline. All
// well: every job goes out. Otherwise no job does: every agent is killed (one that said
// hello reads EOF and starts nothing), and each one that failed is described.
void AgentLinks::checkHellos() {
  if (!hostAgents() || agentsGreeted_ || helloFailed_) return;
  const bool expired = helloDeadline_ && Clock::now() >= *helloDeadline_;
  bool settled = true;
  for (size_t p = 0; p < processes_.count(); ++p) settled &= link(p).greeted || link(p).ended;
  if (!settled && !expired) return;
  helloDeadline_.reset();
  std::vector<AgentStartProblem> problems;
  for (size_t p = 0; p < processes_.count(); ++p) {
    const Link& l = link(p);
    if (l.greeted && !l.ended && l.version == options_.agentVersion) continue;
    AgentStartProblem problem;
    problem.process = p;
    problem.timedOut = !l.greeted && !l.ended;
    problem.ended = l.ended;
    problem.exitCode = l.ended && WIFEXITED(l.endStatus) ? WEXITSTATUS(l.endStatus) : 0;
    problem.signal = l.ended && WIFSIGNALED(l.endStatus) ? WTERMSIG(l.endStatus) : 0;
    problem.version = l.version;
    for (const auto& line : router_.lastStderr(p)) problem.stderrText += line + "\n";
    problems.push_back(std::move(problem));
  }
  JobOutcome& outcome = policy_.outcome();
  if (problems.empty() && outcome.interruptSignal == 0) {
    agentsGreeted_ = true;
    for (size_t p = 0; p < processes_.count(); ++p) write(p);
    return;
  }
  helloFailed_ = true;
  if (outcome.interruptSignal == 0) outcome.agentStartProblems = std::move(problems);
  policy_.killAll();
}

bool AgentLinks::signal(size_t p, int sig) {
  if (beforeJobsSent()) {
    if (!isNotice(sig)) ::kill(-processes_.pid(p), sig);
    return true;
  }
  Link& l = link(p);
  if (l.inFd < 0 || sig == SIGKILL || !processes_.running(p)) return false;
  l.pendingInput += agentSignalLine(sig);
  write(p);
  return true;
}

bool AgentLinks::hold(size_t p, int sig) {
  Link& l = link(p);
  if (l.inFd < 0) return false;
  if (!beforeJobsSent()) {  // a host agent with its job: it holds its ranks
    l.pendingInput += agentSignalLine(sig);
    write(p);
  }
  return true;
}

bool AgentLinks::orderStop(size_t p, int rank) {
  Link& l = link(p);
  if (l.inFd < 0) return false;
  l.pendingInput += agentStopRankLine(rank);
  write(p);
  return true;
}

bool AgentLinks::takeOwnLine(size_t p, bool isErr, std::string_view line, bool& toConsole) {
  Link& l = link(p);
  if (!isErr && !l.greeted) {
    if (auto version = parseAgentHello(line)) {
      l.greeted = true;
      l.version = std::move(*version);
      checkHellos();
      return true;
    }
  }
  if (isErr) {
    if (line == kAgentAlive) return true;  // its being heard was all it had to say
    if (auto pid = parseAgentPid(line)) {
      l.pidThere = *pid;
      return true;
    }
    if (auto taken = parseAgentInputTaken(line)) {
      if (stdinSender_ && stdinTo_ == p) stdinSender_->taken(*taken);
      return true;
    }
    if (auto ended = parseAgentRankEnd(line)) {
      policy_.agentRankEnded(*ended, Clock::now());
      return true;
    }
    if (line == kAgentInputClosed) {
      if (stdinSender_ && stdinTo_ == p) stdinSender_->stop();
      return true;
    }
    if (auto failure = parseAgentFailure(line)) {
      policy_.agentRankFailed(p, std::move(*failure), Clock::now());
      return true;
    }
  }
  // ssh's words before its agent said hello explain a host problem, reported in one table
  // once every host has answered, not line by line as they come.
  toConsole = !(isErr && !l.greeted);
  return false;
}

void AgentLinks::startBeating(Clock::time_point now) {
  if (!options_.heartbeatLine.empty()) ownBeatAt_ = now + options_.heartbeatEvery;
  if (hostAgents()) watchAt_ = now + std::chrono::seconds(1);
  heardFloor_ = now;
}

std::optional<AgentLinks::Clock::time_point> AgentLinks::beatAt() const {
  if (ownBeatAt_ && watchAt_) return std::min(*ownBeatAt_, *watchAt_);
  return ownBeatAt_ ? ownBeatAt_ : watchAt_;
}

void AgentLinks::beatAndWatch(Clock::time_point now,
                              const std::function<std::optional<Clock::time_point>(size_t p)>& lastData) {
  if (ownBeatAt_ && now >= *ownBeatAt_) {
    ownBeatAt_ = now + options_.heartbeatEvery;
    router_.own(STDERR_FILENO, options_.heartbeatLine + "\n");
    router_.flush();
  }
  if (!watchAt_ || now < *watchAt_) return;
  watchAt_ = now + std::chrono::seconds(1);
  if (beforeJobsSent()) {
    heardFloor_ = now;  // silence while the jobs wait is the hello phase's
    return;
  }
  beat();
  for (size_t p = 0; p < links_.size(); ++p) {
    if (auto last = lastData(p)) watchSilence(p, std::max(*last, heardFloor_), now);
  }
}

void AgentLinks::watchSilence(size_t p, Clock::time_point lastHeard, Clock::time_point now) {
  if (!hostAgents()) return;
  Link& l = link(p);
  if (l.ended || l.frozen || !processes_.running(p) || policy_.unneeded(p)) return;
  const auto silent = now - lastHeard;
  if (silent < options_.agentSilenceLimit) return;
  l.frozen = true;
  policy_.agentFrozen(p, static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(silent).count()), now);
  // Nothing more will come through its connection: its ssh here goes at once (the job need
  // not wait the kill grace for it), and the agent there is killed over a new one.
  processes_.signal(p, SIGKILL);
}

void AgentLinks::killThere(size_t p) {
  Link& l = link(p);
  if (!hostAgents() || l.ended || l.killedThere || l.pidThere <= 0 || !options_.killFrozenAgent) return;
  l.killedThere = true;
  options_.killFrozenAgent(processes_.spec(p), l.pidThere);
}

void AgentLinks::beat() {
  if (!hostAgents() || holdingInput()) return;
  for (size_t p = 0; p < links_.size(); ++p) {
    Link& l = links_[p];
    // One is enough in the queue: an agent that takes none is not reading anyway.
    if (l.inFd < 0 || l.pendingInput.find(kHvdrunAlive) != std::string::npos) continue;
    l.pendingInput += kHvdrunAlive;
    write(p);
  }
}

void AgentLinks::addPolls(std::vector<pollfd>& pfds) {
  writerPolls_.clear();
  sourcePoll_.reset();
  pipePoll_.reset();
  for (size_t p = 0; p < links_.size(); ++p) {
    if (links_[p].inFd >= 0 && !links_[p].pendingInput.empty() && !holdingInput()) {
      writerPolls_.emplace_back(pfds.size(), p);
      pfds.push_back({links_[p].inFd, POLLOUT, 0});
    }
  }
  // --stdin forwarded: the input's source, and (an agent) its rank's stdin pipe while bytes
  // wait for it.
  if (stdinSender_ && stdinTo_ && !holdingInput() && !helloFailed_) {
    Link& to = link(*stdinTo_);
    if (!processes_.running(*stdinTo_) || to.inFd < 0) stdinSender_->stop();  // its agent is gone
    // Frames wait in the agent's input behind any signal lines; read no more meanwhile.
    if (to.pendingInput.size() < kAgentInputWindow && stdinSender_->wantsRead(Clock::now())) {
      sourcePoll_ = pfds.size();
      pfds.push_back({options_.stdinForwarding->fd, POLLIN, 0});
    }
  }
  if (stdinFeeder_) {
    if (stdinTo_ && !processes_.running(*stdinTo_)) router_.own(STDERR_FILENO, stdinFeeder_->rankEnded());
    // Drained whatever the rank does: the window bounds it, and the connection's reader must
    // never wait on it (signals come that way too).
    if (stdinFeeder_->source() >= 0) {
      sourcePoll_ = pfds.size();
      pfds.push_back({stdinFeeder_->source(), POLLIN, 0});
    }
    if (stdinFeeder_->wantsWrite()) {
      pipePoll_ = pfds.size();
      pfds.push_back({stdinFeeder_->pipe(), POLLOUT, 0});
    }
  }
}

void AgentLinks::polled(const std::vector<pollfd>& pfds) {
  for (auto [index, p] : writerPolls_) {
    if (pfds[index].revents != 0) write(p);
  }
  if (sourcePoll_ && pfds[*sourcePoll_].revents != 0) forwardStdin();
  if (pipePoll_ && pfds[*pipePoll_].revents != 0) router_.own(STDERR_FILENO, stdinFeeder_->writePipe());
}

std::optional<AgentLinks::Clock::time_point> AgentLinks::retryAt() const {
  return stdinSender_ ? stdinSender_->retryAt() : std::nullopt;
}

void AgentLinks::shiftDeadlines(Clock::duration by) {
  if (helloDeadline_) *helloDeadline_ += by;
}

void AgentLinks::forwardStdin() {
  if (stdinFeeder_) {
    // A host agent's records about it go to stderr, in order with the ranks' lines.
    router_.own(STDERR_FILENO, stdinFeeder_->readSource());
    return;
  }
  std::string frame = stdinSender_->read();
  if (frame.empty()) return;
  link(*stdinTo_).pendingInput += frame;
  write(*stdinTo_);
}

// Writes what the pipe takes now; the rest waits for POLLOUT. A closed pipe (the agent is
// gone) drops it.
void AgentLinks::write(size_t p) {
  Link& l = link(p);
  while (l.inFd >= 0 && !l.pendingInput.empty()) {
    ssize_t n = ::write(l.inFd, l.pendingInput.data(), l.pendingInput.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) {
      close(p);
      return;
    }
    l.pendingInput.erase(0, static_cast<size_t>(n));
  }
}

void AgentLinks::close(size_t p) {
  Link& l = link(p);
  if (l.inFd >= 0) ::close(l.inFd);
  l.inFd = -1;
  l.pendingInput.clear();
}

}  // namespace hvd::cli
