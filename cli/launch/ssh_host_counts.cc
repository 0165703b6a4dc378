// cli/launch/ssh_host_counts.cc: see ssh_host_counts.h.
#include "cli/launch/ssh_host_counts.h"

#include <sstream>
#include <thread>

#include "cli/plan/shell_quote.h"
#include "cli/supervise/agent_protocol.h"
#include "cli/user_error.h"

namespace hvd::cli {

std::string agentCountCommandLine(const std::string& remoteHvdrun) {
  return "exec " + shellQuote(remoteHvdrun) + " host-agent --count";
}

std::variant<HostCounts, HostProblem> interpretHostCount(const std::string& host, const CapturedRun& run,
                                                         const std::string& remoteHvdrun,
                                                         const std::string& expectedVersion,
                                                         std::chrono::milliseconds timeout) {
  std::optional<std::string> version;
  std::optional<HostCounts> counts;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    if (!version) version = parseAgentHello(line);
    if (!counts) counts = parseAgentCounts(line);
  }
  // The host check reads the version from the last line: give it the hello's.
  CapturedRun check = run;
  check.out = version.value_or(run.out);
  if (auto problem = interpretHostCheck(host, check, remoteHvdrun, expectedVersion, timeout)) return *problem;
  if (!counts) {
    return HostProblem{host, "its hvdrun said hello but did not count its GPUs and CPUs",
                       "install the same hvdrun build on every host"};
  }
  return *counts;
}

HostCountsAnswer countHostsOverSsh(const SshSettings& ssh, const std::string& client, const std::string& remoteHvdrun,
                                   const std::vector<std::string>& hosts) {
  std::vector<Result<CapturedRun>> runs(hosts.size(), Result<CapturedRun>(CapturedRun{}));
  {
    std::vector<std::thread> askers;
    for (size_t i = 0; i < hosts.size(); ++i) {
      askers.emplace_back([&, i] {
        std::vector<std::string> argv = sshArgv(ssh, hosts[i], agentCountCommandLine(remoteHvdrun));
        argv.front() = client;
        RunOptions options;
        options.timeout = ssh.connectTimeout;
        runs[i] = runAndCapture(argv, options);
      });
    }
    for (std::thread& t : askers) t.join();
  }
  HostCountsAnswer answer;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!runs[i]) {
      answer.problems.push_back({hosts[i], "cannot run " + client + ": " + runs[i].status().message(),
                                 "install an OpenSSH client, or name yours with --ssh-command"});
      continue;
    }
    auto result = interpretHostCount(hosts[i], *runs[i], remoteHvdrun, agentVersion(), ssh.connectTimeout);
    if (auto* counts = std::get_if<HostCounts>(&result)) {
      answer.counts[hosts[i]] = *counts;
    } else {
      answer.problems.push_back(std::get<HostProblem>(result));
    }
  }
  return answer;
}

std::map<std::string, HostCounts> countHostsForPlan(const Options& o, const std::vector<std::string>& hosts) {
  const SshLaunch launch = sshLaunchFor(o);
  HostCountsAnswer answer = countHostsOverSsh(launch.ssh, launch.client, launch.remoteHvdrun, hosts);
  if (!answer.problems.empty()) {
    std::string table = renderHostProblems(answer.problems, hosts.size());
    if (!table.empty() && table.back() == '\n') table.pop_back();
    throw UserError(ExitCode::kEnvironment, table);
  }
  return answer.counts;
}

}  // namespace hvd::cli
