// cli/launch/ssh_host_counts.h: what -H hosts have, asked before the plan is made when
// --nproc-per-node gpu, cpu or auto needs it (torchrun's `--nproc-per-node gpu` runs on each
// node and counts there; hvdrun plans every host from one machine). One `hvdrun host-agent
// --count` per host over ssh, all at once; each answers its hello and its counts
// (agent_protocol.h) and ends.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "cli/launch/ssh_launcher.h"
#include "cli/plan/plan.h"

namespace hvd::cli {

// The shell command line that runs the count there.
std::string agentCountCommandLine(const std::string& remoteHvdrun);

// One host's answer: its counts, or what kept it from answering (as the launch's host check
// words it: ssh's own error, a missing or different hvdrun, no answer).
std::variant<HostCounts, HostProblem> interpretHostCount(const std::string& host, const CapturedRun& run,
                                                         const std::string& remoteHvdrun,
                                                         const std::string& expectedVersion,
                                                         std::chrono::milliseconds timeout);

struct HostCountsAnswer {
  std::map<std::string, HostCounts> counts;
  std::vector<HostProblem> problems;  // in the order of `hosts`
};

// Asks every host at once; each within ssh.connectTimeout.
HostCountsAnswer countHostsOverSsh(const SshSettings& ssh, const std::string& client, const std::string& remoteHvdrun,
                                   const std::vector<std::string>& hosts);

// The same for the plan, with the launch's ssh settings: a host that cannot answer fails it
// with the hosts' table, as the launch's own check of the hosts would (UserError, exit 3).
std::map<std::string, HostCounts> countHostsForPlan(const Options& o, const std::vector<std::string>& hosts);

}  // namespace hvd::cli
