// cli/supervise/supervision.h: what a supervision is given (the processes to start and
// how to watch them) and what it returns (the job's outcome). The words every launcher,
// the job and the host agent use with the supervisor (process_supervisor.h).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/supervise/line_reader.h"
#include "cli/supervise/line_splitter.h"
#include "cli/supervise/rank_failure.h"

namespace hvd::cli {

struct RankProcess {
  int rank = 0;
  std::string host;
  std::string executable;         // resolved path, checked before anything is started
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;   // the complete environment, "NAME=value"
  // A host agent (agent_protocol.h), directly or through ssh: its stdin is a pipe that
  // carries this job first and then the signals hvdrun passes on (all but SIGKILL, which
  // ends the process itself, and with it the connection). Empty: stdin is hvdrun's own.
  std::optional<std::string> agentInput{};
  // stdin from /dev/null instead of hvdrun's own (--stdin chose another rank, or none).
  bool emptyStdin = false;
  // The CPUs the process is pinned to before exec (--bind-to); empty: left as hvdrun's.
  std::vector<int> cpus{};
  // A host agent: the ranks it runs (where the supervisor looks for a rank's process).
  std::vector<int> agentRanks{};
};

struct SupervisorOptions {
  bool prefixOutput = true;  // "[rank]<stdout>:" before every line
  // What the processes are. kRanks: each is a rank, every line its own. kLauncher: one
  // process (srun, mpirun) stands for every rank, and labels their lines; its unlabelled
  // lines (its own messages) pass through unprefixed. kHostAgents: each is a host agent
  // that prefixes its ranks' lines itself and reports a failing rank in a record
  // (agent_protocol.h).
  enum class Processes { kRanks, kLauncher, kHostAgents };
  Processes processes = Processes::kRanks;
  // How a process's lines are read and whose each is: the launcher's labels (kLauncher,
  // kHostAgents). Unset: each process is a rank (rankLineReader).
  LineReaderFactory lineReader;
  // The job's ranks, 0 .. rankCount-1 (kLauncher: one process stands for them all).
  int rankCount = 0;
  // Also write every rank's lines to outputDir/rank.N/stdout and stderr (all ranks, always;
  // every rank's files exist from the start, empty for a silent rank).
  std::string outputDir;
  // Add to those files instead of starting them afresh (a restarted job's later starts: the
  // failed start's output stays, followed by the next one's).
  bool appendOutputFiles = false;
  // Show only these ranks on the console (srun's own messages always show); empty: all.
  std::set<int> consoleRanks;
  bool timestamps = false;  // start console lines with the local time, to the millisecond
  // A line a rank began and has not ended (a prompt: "name? ", "(Pdb) ") goes to the
  // console once its stream has been quiet 150 ms, without an end; the rest of it follows
  // unprefixed, unless other words came between (then the open line is ended first and
  // the rest comes prefixed), where the line reader knows whose the rest is. A host agent
  // turns it off: its stdout and stderr carry whole lines and failure records to hvdrun.
  bool showOpenLines = true;
  // A rank's line longer than this is cut into lines of this size (--max-line-kb): hvdrun
  // holds at most this much of a stream that never writes a newline.
  size_t maxLineBytes = LineSplitter::kDefaultMaxLine;
  // --start-timeout: once any rank has reached the rendezvous, every rank must within this
  // time (a program that never uses the runtime is not held to it). readyRanks tells which
  // of the rankCount ranks have; 0 ms turns the check off.
  std::chrono::milliseconds startTimeout{0};
  std::function<std::set<int>()> readyRanks;
  std::chrono::milliseconds killGrace{5000};
  // Preemption: when hvdrun receives preemptSignal (SIGUSR1 or SIGUSR2; 0: none), it calls
  // onPreempt once (which raises the ranks' flag) before forwarding the signal; with
  // preemptGrace set, ranks still running that long after are stopped like on SIGTERM.
  int preemptSignal = 0;
  std::function<void()> onPreempt;
  std::optional<std::chrono::milliseconds> preemptGrace;
  // When this rank exits 0, the others are stopped (SIGTERM, grace, SIGKILL) and the job
  // succeeds: ParameterServerStrategy's chief, whose end is the job's.
  std::optional<int> coordinatorRank;
  // Called once when coordinatorRank exited 0, before the others are stopped.
  std::function<void()> onCoordinatorDone;
  // Elastic training (--min-np): told of each rank that ends by itself (not one hvdrun
  // stopped), with its failure when it failed; of several at once where they ended together
  // (a host agent lost: all its ranks, the failure the first's). goesOn: the job goes on
  // without them, so their failures are not the job's and nothing else is stopped. stop: ranks to stop now that are
  // not failures (added for a world that can no longer form); their ends say nothing more.
  // onceStopped: called when they have all ended (telling others about their world then
  // would reach them first, and they would fail noisily instead of being stopped).
  struct AfterRankEnd {
    bool goesOn = false;
    std::vector<int> stop{};
    std::function<void()> onceStopped{};
  };
  std::function<AfterRankEnd(const std::vector<int>& ranks, const RankFailure* failure)> rankEnded;
  // Elastic training (ranks forked here): a rank found frozen (state T) this long, which its
  // peers' collectives have given up on by then (HVD_TIMEOUT), fails: it is killed and
  // reported to rankEnded. One frozen when another rank fails fails at once.
  std::optional<std::chrono::milliseconds> frozenFails;
  // Elastic training whose hosts change: asked every changeRanksEvery, while the job runs
  // and nothing has failed it, for ranks to start now beside the others, each started and
  // watched like the first ones (one that cannot be started is reported to rankEnded as
  // failed, exit code 127), and for ranks to stop, which are not failures (AfterRankEnd::stop).
  struct RankChanges {
    std::vector<RankProcess> start{};
    std::vector<int> stop{};
  };
  std::function<RankChanges()> changeRanks;
  std::chrono::milliseconds changeRanksEvery{1000};
  // Called with each rank's pid (its session id) right after fork (the guardian's watch).
  std::function<void(int)> onRankStarted;
  // Called once, the moment hvdrun begins to stop the job for reasons of its own (a signal it
  // got, its console gone), before any process is signalled: srun's and mpirun's launchers
  // count the task-end reports in by then, the only ones that can be a rank's own failure.
  std::function<void()> onOwnStop;
  // Called the moment a rank becomes the job's root cause (a host agent reports it at once).
  std::function<void(const RankFailure&)> onFailure;
  // Called when a rank exits 0 by itself (hvdrun did not stop it): a host agent tells hvdrun,
  // whose report of a peer that failed for want of it then says it ended (returned early).
  std::function<void(int rank)> onCleanEnd;
  // The rank whose going failed `rank`'s collectives, as that rank's runtime told hvdrun
  // (rendezvous::peerGoneKey); nullopt when it said nothing. A rank that exits with an
  // error first is then a consequence: the rank it names is given a moment to end by
  // itself, and its end, if a failure, is the job's cause. Ranks forked here, and (kHostAgents)
  // the ranks of host agents: the agent running that rank is not told to stop meanwhile,
  // and the rank's failure record, if one comes, is the cause.
  std::function<std::optional<int>(int rank)> peerGoneOf;
  // kHostAgents: every agent first says hello with its version (agent_protocol.h); no job is
  // sent to any until all have said this one, within agentHelloTimeout. Otherwise every
  // agent is killed (so nothing starts anywhere) and JobOutcome::agentStartProblems says why.
  std::string agentVersion;
  std::chrono::milliseconds agentHelloTimeout{30000};
  // kHostAgents: an agent silent for agentSilenceLimit once its job is in (agent_protocol.h)
  // is frozen: it is the job's failure, and this kills it where it runs (given its pid
  // there); unset, the agent's process here (ssh) is killed, which does not reach it.
  std::chrono::milliseconds agentSilenceLimit{5000};
  std::function<void(const RankProcess& agent, long pidThere)> killFrozenAgent;
  // A host agent's supervisor: this line on stderr every heartbeatEvery, while it runs.
  std::string heartbeatLine;
  std::chrono::milliseconds heartbeatEvery{1000};
  // Ctrl-Z (SIGTSTP) stops the job as a whole, as it stops a foreground program's every
  // process: kSelf (hvdrun) holds the ranks (SIGSTOP to each one's group; host agents,
  // srun and mpirun are passed SIGTSTP), stops itself as the shell expects, and once
  // continued (fg, bg) continues them. kRanks (a host agent, which must go on reading its
  // connection) holds its ranks only, until it gets SIGCONT.
  enum class OnStop { kSelf, kRanks };
  OnStop onStop = OnStop::kSelf;
  // --stdin for a rank a host agent runs (stdin_forwarding.h). kHostAgents (hvdrun): fd is
  // hvdrun's stdin, sent to the agent running `rank`. kRanks (that agent): fd brings the
  // input's bytes, which go into `rank`'s stdin, a pipe; the agent's records about it go to
  // stderr in order with the ranks' lines. The supervisor takes fd (kRanks).
  struct StdinForwarding {
    int fd = 0;
    int rank = 0;
  };
  std::optional<StdinForwarding> stdinForwarding;
};

// An agent that did not say hello with the right version (kHostAgents); what it did instead.
struct AgentStartProblem {
  size_t process = 0;      // index into superviseRanks' processes
  bool timedOut = false;   // neither hello nor an end within agentHelloTimeout
  bool ended = false;      // the process ended (exitCode or signal)
  int exitCode = 0;
  int signal = 0;
  std::string version;     // what its hello said, empty without one
  std::string stderrText;  // its last stderr lines (ssh's own reasons)
};

struct JobOutcome {
  int exitCode = 0;  // hvdrun's exit code for this job
  std::optional<RankFailure> firstFailure;
  int interruptSignal = 0;  // the signal hvdrun received, if the job was interrupted
  int ranksStopped = 0;     // ranks hvdrun had to stop after the failure or interrupt
  std::vector<int> alsoFailed;  // ranks that, once told to stop, ended with errors of their own
  // Elastic training: failed ranks the job went on without (rankEnded said so), in order.
  std::vector<RankFailure> leftBehind;
  std::vector<int> neverReady;  // set when the start timeout failed the job
  // Ranks that were stopped (SIGSTOP, a debugger: state T) when the first failure came; a
  // stopped rank stalls its peers, so it is the likelier cause. Local ranks only.
  std::vector<int> stoppedWhenFailed;
  bool preempted = false;       // the preemption signal arrived
  int noticePassedOn = 0;       // the last notice (SIGUSR1, SIGUSR2) hvdrun passed on to the ranks
  int ranksStoppedAfterPreemption = 0;  // still running when preemptGrace ended
  int ranksStoppedAfterCoordinator = 0;  // still running when the coordinator rank exited 0
  // --output-filename: files that could not be created or written to the end, and the
  // first reason. A job that otherwise succeeded then exits 3 (docs/exit-codes.md).
  int incompleteOutputFiles = 0;
  std::string outputProblem;
  // Labelled modes: each rank's last stderr lines, and the launcher's own messages.
  std::map<int, std::deque<std::string>> launcherStderr;
  std::vector<std::string> launcherMessages;
  // The console (hvdrun's stdout or stderr) stopped taking output and hvdrun stopped
  // waiting for it (after an interrupt, or told to stop while waiting): the rest of the
  // ranks' lines are lost, and the stalled fd now leads to /dev/null.
  bool consoleStalled = false;
  // "stdout" or "stderr": that console's reader went away (EPIPE) with output still to
  // write. Ranks still running then were stopped (interruptSignal SIGPIPE, exit 141).
  std::string consoleClosed;
  // The first other console write failure ("writing stdout: No space left on device"): the
  // ranks' output there is incomplete; a job that otherwise succeeded exits 3.
  std::string consoleProblem;
  // kHostAgents: set when some agent never said the right hello; then no job was sent.
  std::vector<AgentStartProblem> agentStartProblems;
};

}  // namespace hvd::cli
