// cli/launch/ssh_launcher.h: starting a plan's ranks on other hosts over ssh, outside Slurm.
// One ssh connection per host runs `hvdrun host-agent` there (host_agent_command.h), which
// says hello with its version and then gets its ranks through the connection's stdin
// (agent_protocol.h). The hellos are the check of every host (reachable, a login without a
// password, the same hvdrun at the expected path): no job goes out before all have come.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/launch/launcher.h"
#include "cli/os/subprocess.h"
#include "cli/supervise/line_reader.h"

namespace hvd::cli {

std::unique_ptr<Launcher> makeSshLauncher(const Options& options);

// A host agent's output: "[3]<stdout>:text" is rank 3's line; its other lines are its own
// (its hello on stdout, its records on stderr: agent_protocol.h), and ssh's.
std::unique_ptr<LineReader> hostAgentLineReader(size_t maxLine);

// The parts of `rank`'s environment hvdrun sends its host agent: the plan's, the job's and
// the elastic one; without GPUs where the agent shares out its host's (agentSharesGpus).
RankEnvironment sshRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                   bool agentSharesGpus);

// Whether the plan puts ranks on hosts other than this one (outside Slurm: ssh's job).
bool ranksElsewhere(const Plan& plan);

struct SshSettings {
  std::vector<std::string> client{"ssh"};  // the client and options of the user's own
  int port = 0;                            // 0: ssh's own choice
  std::string identityFile;                // empty: ssh's own choice
  std::chrono::milliseconds connectTimeout{30000};
};

// How an ssh launch reaches the other hosts.
struct SshLaunch {
  SshSettings ssh;
  std::string client;        // the ssh executable
  std::string remoteHvdrun;  // hvdrun's path on the other hosts
};
// From the options; UserError when there is no ssh client to run.
SshLaunch sshLaunchFor(const Options& o);

// --ssh-command split at spaces ("ssh" when empty); kInvalidArgument for only spaces.
Result<std::vector<std::string>> sshClientWords(const std::string& command);

// The ssh command line that runs remoteCommand (a shell command line) on host: no password
// prompts (BatchMode), no terminal, no X11, bounded connection set-up, and a connection
// that ends when the host stops answering (ServerAlive). The host comes after "--", so a
// host name can never be read as an option.
std::vector<std::string> sshArgv(const SshSettings& ssh, const std::string& host, const std::string& remoteCommand);

// The shell command line that starts the host agent.
std::string agentCommandLine(const std::string& remoteHvdrun);

struct HostProblem {
  std::string host;
  std::string problem;
  std::string hint;
};

// What one host's connection said instead of the right hello (out: the hello's version), or
// nullopt when the host is ready: ssh's own error read into a hint, a missing or different
// hvdrun, no answer.
std::optional<HostProblem> interpretHostCheck(const std::string& host, const CapturedRun& run,
                                              const std::string& remoteHvdrun, const std::string& expectedVersion,
                                              std::chrono::milliseconds timeout);

// One table: a line per host with its problem, and its hint under it.
std::string renderHostProblems(const std::vector<HostProblem>& problems, size_t hostCount);

// The environment ranks on another host get: this one's, without what describes only this
// machine or this login (HOSTNAME, PWD, SSH_*, DISPLAY, ...) or shell internals.
std::vector<std::string> remoteEnvironment(const std::vector<std::string>& env);

}  // namespace hvd::cli
