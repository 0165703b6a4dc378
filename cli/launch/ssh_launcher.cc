// cli/launch/ssh_launcher.cc: ssh command lines, the parallel host check and its report.
#include "cli/launch/ssh_launcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/plan/shell_quote.h"

namespace hvd::cli {
namespace {

// The last line ssh wrote that says something ("ssh: connect to host ... refused").
std::string lastLine(const std::string& text) {
  std::string last;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) last = line;
    start = end + 1;
  }
  return last.size() > 300 ? last.substr(0, 300) + "..." : last;
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// ssh's reasons, and what to do about each.
std::string hintForSshError(const std::string& error) {
  if (contains(error, "Connection refused")) {
    return "no sshd listens on that host and port: start sshd there, or give its port with -p/--ssh-port";
  }
  if (contains(error, "Permission denied")) {
    return "ssh needs a key it can use without a password: ssh-copy-id to the host, or -i/--ssh-identity-file";
  }
  if (contains(error, "Could not resolve hostname") || contains(error, "Name or service not known")) {
    return "this machine cannot resolve that name: check -H/--hostfile, or give the host's address";
  }
  if (contains(error, "Host key verification failed") || contains(error, "REMOTE HOST IDENTIFICATION")) {
    return "ssh does not know (or no longer trusts) the host's key: log in once by hand to check and accept it";
  }
  if (contains(error, "banner exchange")) {
    return "the host took the connection but its sshd does not answer (stopped, or overloaded): try "
           "'ssh -v' to it by hand; --start-timeout waits longer";
  }
  if (contains(error, "timed out") || contains(error, "No route to host") || contains(error, "Network is unreachable")) {
    return "the host does not answer from here: is it up, and does a firewall let ssh through?";
  }
  return "run the same ssh by hand to see more (ssh -v)";
}

}  // namespace

Result<std::vector<std::string>> sshClientWords(const std::string& command) {
  if (command.empty()) return std::vector<std::string>{"ssh"};
  std::vector<std::string> words;
  size_t start = 0;
  while (start < command.size()) {
    size_t end = command.find(' ', start);
    if (end == std::string::npos) end = command.size();
    if (end > start) words.push_back(command.substr(start, end - start));
    start = end + 1;
  }
  if (words.empty()) return invalidArgument("--ssh-command '" + command + "' names no program");
  return words;
}

std::vector<std::string> sshArgv(const SshSettings& ssh, const std::string& host, const std::string& remoteCommand) {
  auto seconds = std::max<long long>(1, (ssh.connectTimeout.count() + 999) / 1000);
  std::vector<std::string> argv = ssh.client;
  argv.insert(argv.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(seconds), "-o",
                           "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-T", "-x"});
  if (ssh.port > 0) argv.insert(argv.end(), {"-p", std::to_string(ssh.port)});
  if (!ssh.identityFile.empty()) argv.insert(argv.end(), {"-i", ssh.identityFile});
  argv.insert(argv.end(), {"--", host, remoteCommand});
  return argv;
}

std::string agentCommandLine(const std::string& remoteHvdrun) {
  // exec: the agent is the session's process, so nothing stands between it and sshd.
  return "exec " + shellQuote(remoteHvdrun) + " host-agent";
}

std::optional<HostProblem> interpretHostCheck(const std::string& host, const CapturedRun& run,
                                              const std::string& remoteHvdrun, const std::string& expectedVersion,
                                              std::chrono::milliseconds timeout) {
  if (run.timedOut) {
    return HostProblem{host, fmt::format("no answer within {} s", (timeout.count() + 999) / 1000),
                       "the host or its sshd hangs (a stopped sshd, a firewall that drops packets): try "
                       "'ssh " + host + " true'; --start-timeout waits longer"};
  }
  std::string version = lastLine(run.out);
  if (run.succeeded() && version == expectedVersion) return std::nullopt;
  if (run.exitCode == 255) {
    std::string error = lastLine(run.err);
    return HostProblem{host, error.empty() ? "ssh failed (exit 255) and said nothing" : error, hintForSshError(error)};
  }
  if (run.exitCode == 126 || run.exitCode == 127) {
    return HostProblem{host, "no hvdrun at " + remoteHvdrun + " there",
                       "install hvdrun at the same path on every host, or name its path there with --remote-hvdrun"};
  }
  if (run.succeeded()) {
    return HostProblem{host, "its hvdrun is " + (version.empty() ? std::string("of unknown version") : version) +
                                 ", this one " + expectedVersion,
                       "install the same hvdrun build on every host (the agents must speak the same protocol)"};
  }
  std::string error = lastLine(run.err);
  return HostProblem{host,
                     fmt::format("{} {} there{}", remoteHvdrun,
                                 run.signaled() ? "was killed by signal " + std::to_string(run.signal)
                                                : "failed with exit code " + std::to_string(run.exitCode),
                                 error.empty() ? "" : ": " + error),
                     "run '" + remoteHvdrun + " --version' on that host to see what is wrong"};
}

std::string renderHostProblems(const std::vector<HostProblem>& problems, size_t hostCount) {
  size_t width = 4;
  for (const HostProblem& p : problems) width = std::max(width, p.host.size());
  std::string text = fmt::format("{} of {} host(s) cannot start ranks; nothing was started:\n", problems.size(), hostCount);
  text += fmt::format("  {:<{}}  PROBLEM\n", "HOST", width);
  for (const HostProblem& p : problems) {
    text += fmt::format("  {:<{}}  {}\n", p.host, width, p.problem);
    text += fmt::format("  {:<{}}    hint: {}\n", "", width, p.hint);
  }
  return text;
}

std::vector<std::string> remoteEnvironment(const std::vector<std::string>& env) {
  static const char* const kThisMachineOnly[] = {"HOSTNAME", "PWD",        "OLDPWD",  "SHLVL",   "_",
                                                 "DISPLAY",  "XAUTHORITY", "TMUX",    "TMUX_PANE", "TERMCAP",
                                                 "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK",
                                                 "SSH_AGENT_PID", "SSH_ORIGINAL_COMMAND", "HVDRUN_SSH_COMMAND"};
  std::vector<std::string> out;
  for (const std::string& kv : env) {
    std::string name = kv.substr(0, kv.find('='));
    bool drop = name.rfind("BASH_FUNC_", 0) == 0 ||
                std::any_of(std::begin(kThisMachineOnly), std::end(kThisMachineOnly),
                            [&](const char* n) { return name == n; });
    if (!drop) out.push_back(kv);
  }
  return out;
}

}  // namespace hvd::cli
