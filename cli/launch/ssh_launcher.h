// cli/launch/ssh_launcher.h: starting a plan's ranks on other hosts over ssh, outside Slurm.
// One ssh connection per host runs `hvdrun host-agent` there (host_agent_command.h), which
// gets its ranks through the connection's stdin (agent_protocol.h). Before anything starts,
// every host is checked in parallel: reachable, a login without a password, the same
// hvdrun at the expected path.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cli/os/subprocess.h"

namespace hvd::cli {

struct SshSettings {
  std::vector<std::string> client{"ssh"};  // the client and options of the user's own
  int port = 0;                            // 0: ssh's own choice
  std::string identityFile;                // empty: ssh's own choice
  std::chrono::milliseconds connectTimeout{30000};
};

// --ssh-command split at spaces ("ssh" when empty); kInvalidArgument for only spaces.
Result<std::vector<std::string>> sshClientWords(const std::string& command);

// The ssh command line that runs remoteCommand (a shell command line) on host: no password
// prompts (BatchMode), no terminal, no X11, bounded connection set-up, and a connection
// that ends when the host stops answering (ServerAlive). The host comes after "--", so a
// host name can never be read as an option.
std::vector<std::string> sshArgv(const SshSettings& ssh, const std::string& host, const std::string& remoteCommand);

// The shell command line that starts the host agent (or with check, prints its version).
std::string agentCommandLine(const std::string& remoteHvdrun, bool check);

struct HostProblem {
  std::string host;
  std::string problem;
  std::string hint;
};

// What the check of one host (ssh ... host-agent --check) says, or nullopt when the host
// is ready: ssh's own error read into a hint, a missing or different hvdrun, no answer.
std::optional<HostProblem> interpretHostCheck(const std::string& host, const CapturedRun& run,
                                              const std::string& remoteHvdrun, const std::string& expectedVersion,
                                              std::chrono::milliseconds timeout);

// Checks every host at once; returns the problems, in the hosts' order. Takes at most
// `timeout` (plus a moment), whatever the hosts do.
std::vector<HostProblem> checkHosts(const std::vector<std::string>& hosts, const SshSettings& ssh,
                                    const std::string& remoteHvdrun, const std::string& expectedVersion,
                                    std::chrono::milliseconds timeout);

// One table: a line per host with its problem, and its hint under it.
std::string renderHostProblems(const std::vector<HostProblem>& problems, size_t hostCount);

// The environment ranks on another host get: this one's, without what describes only this
// machine or this login (HOSTNAME, PWD, SSH_*, DISPLAY, ...) or shell internals.
std::vector<std::string> remoteEnvironment(const std::vector<std::string>& env);

}  // namespace hvd::cli
