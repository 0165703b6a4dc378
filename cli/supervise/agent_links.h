// cli/supervise/agent_links.h: the supervisor's side of what its processes read on stdin and
// say besides their ranks' lines: a host agent's connection (agent_protocol.h: the hello
// phase, the job and the orders written to its stdin, the records read from its stderr),
// and --stdin forwarded to the rank that reads it (stdin_forwarding.h), on either side of
// a host agent. Never blocks: what a pipe does not take now waits for POLLOUT.
// Single-threaded: the supervisor's loop calls it.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/supervise/end_policy.h"
#include "cli/supervise/output_router.h"
#include "cli/supervise/stdin_forwarding.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

class AgentLinks {
 public:
  using Clock = std::chrono::steady_clock;

  AgentLinks(const SupervisorOptions& options, EndPolicy::Processes& processes, EndPolicy& policy,
             OutputRouter& router);
  ~AgentLinks();
  AgentLinks(const AgentLinks&) = delete;
  AgentLinks& operator=(const AgentLinks&) = delete;

  // Once the job's first processes are known: which of them --stdin goes to.
  void findStdinRank();
  // Whether process p's stdin is to be a pipe (a host agent's connection, or the pipe of the
  // rank a host agent feeds forwarded stdin to).
  bool wantsStdinPipe(size_t p) const;
  // Process p started with that pipe's write end (-1: none).
  void started(size_t p, int stdinFd);
  // A host agent ended: its input is closed; during the hello phase that settles it.
  void ended(size_t p, int status);

  // kHostAgents: until every agent has said hello, jobs (and signal lines) wait, and signals
  // go to the processes themselves (beforeJobsSent: also once the phase failed).
  bool holdingInput() const;
  bool beforeJobsSent() const { return holdingInput() || helloFailed_; }
  void startHelloPhase(Clock::time_point now);
  std::optional<Clock::time_point> helloDeadline() const { return helloDeadline_; }
  void checkHellos();

  // A signal or order for an agent, through its connection; false when p has none to take
  // it (then the caller signals the process itself).
  bool signal(size_t p, int sig);
  bool orderStop(size_t p, int rank);
  // Ctrl-Z's hold (SIGTSTP) or its end (SIGCONT) for an agent, which holds its ranks; false
  // when p has no connection (then the caller signals the process itself).
  bool hold(size_t p, int sig);

  // A line a host agent wrote that is no rank's: its hello or a record, taken here (true),
  // or words to print (false; toConsole says whether yet).
  bool takeOwnLine(size_t p, bool isErr, std::string_view line, bool& toConsole);

  // The heartbeats (agent_protocol.h), both ways. A host agent's supervisor writes
  // heartbeatLine on stderr every heartbeatEvery; hvdrun, about every second once the jobs
  // are out, writes its own to every agent and looks at each agent's silence: `lastData(p)`
  // is when bytes last came from process p (nullopt: it has ended). An agent silent for
  // agentSilenceLimit, counted from the last moment hvdrun could not read (notReading), is
  // frozen: the end policy hears of it, and it is killed here and where it runs.
  void startBeating(Clock::time_point now);
  void beatAndWatch(Clock::time_point now,
                    const std::function<std::optional<Clock::time_point>(size_t p)>& lastData);
  std::optional<Clock::time_point> beatAt() const;
  void notReading(Clock::time_point now) { heardFloor_ = now; }
  // Agent p is being killed (the kill grace ended, or it froze): killed where it runs too,
  // once, given its pid there, so that a stopped one cannot outlive the job on its host.
  void killThere(size_t p);


  // The poll loop: what to watch, and what came.
  void addPolls(std::vector<pollfd>& pfds);
  void polled(const std::vector<pollfd>& pfds);
  std::optional<Clock::time_point> retryAt() const;
  void shiftDeadlines(Clock::duration by);

 private:
  struct Link {
    int inFd = -1;
    std::string pendingInput;
    bool greeted = false;
    std::string version;
    bool ended = false;
    int endStatus = 0;
    long pidThere = 0;      // the agent's pid on its host (its record), 0 until said
    bool frozen = false;    // watchSilence found it silent
    bool killedThere = false;
  };
  Link& link(size_t p);
  bool hostAgents() const { return options_.processes == SupervisorOptions::Processes::kHostAgents; }
  void write(size_t p);
  void close(size_t p);
  void forwardStdin();
  void beat();  // hvdrun's heartbeat to every agent, queued behind whatever else waits to go
  void watchSilence(size_t p, Clock::time_point lastHeard, Clock::time_point now);

  const SupervisorOptions& options_;
  EndPolicy::Processes& processes_;
  EndPolicy& policy_;
  OutputRouter& router_;
  std::vector<Link> links_;  // by process
  std::optional<Clock::time_point> helloDeadline_;  // every hello by then
  std::optional<Clock::time_point> ownBeatAt_;      // a host agent's next heartbeat line
  std::optional<Clock::time_point> watchAt_;        // when agents' silence is looked at next
  Clock::time_point heardFloor_{};                  // the last moment hvdrun could not read
  bool agentsGreeted_ = false;                      // every job went out
  bool helloFailed_ = false;                        // none will
  // --stdin forwarded: the process it goes to (a rank, or the agent running it), and the half
  // here: hvdrun's sender, or a host agent's feeder.
  std::optional<size_t> stdinTo_;
  std::optional<StdinSender> stdinSender_;
  std::unique_ptr<StdinFeeder> stdinFeeder_;
  // Where addPolls put what polled() reads: writers, the input's source, the feeder's pipe.
  std::vector<std::pair<size_t, size_t>> writerPolls_;  // (pfds index, process)
  std::optional<size_t> sourcePoll_, pipePoll_;
};

}  // namespace hvd::cli
