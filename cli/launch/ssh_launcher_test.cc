// cli/launch/ssh_launcher_test.cc
#include "cli/launch/ssh_launcher.h"

#include <catch2/catch.hpp>

namespace hvd::cli {

TEST_CASE("ssh runs the agent without prompts or a terminal and the host can never be an option", "[ssh]") {
  SshSettings ssh;
  ssh.client = {"ssh", "-F", "conf"};
  ssh.port = 2222;
  ssh.identityFile = "/k/id";
  ssh.connectTimeout = std::chrono::milliseconds(2500);
  auto argv = sshArgv(ssh, "-oProxyCommand=evil", agentCommandLine("/opt/hvd run/hvdrun"));
  std::vector<std::string> expected{"ssh", "-F", "conf", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-o",
                                    "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-T", "-x", "-p", "2222",
                                    "-i", "/k/id", "--", "-oProxyCommand=evil",
                                    "exec '/opt/hvd run/hvdrun' host-agent"};
  CHECK(argv == expected);
  SshSettings plain;
  auto bare = sshArgv(plain, "node1", agentCommandLine("/usr/bin/hvdrun"));
  CHECK(std::find(bare.begin(), bare.end(), "-p") == bare.end());
  CHECK(std::find(bare.begin(), bare.end(), "-i") == bare.end());
  CHECK(bare.back() == "exec /usr/bin/hvdrun host-agent");
}

TEST_CASE("the ssh command setting is split at spaces and must name a program", "[ssh]") {
  CHECK(*sshClientWords("") == std::vector<std::string>{"ssh"});
  CHECK(*sshClientWords("  ssh  -F /x/conf ") == std::vector<std::string>{"ssh", "-F", "/x/conf"});
  CHECK_FALSE(sshClientWords("   ").isOk());
}

namespace {
CapturedRun finished(int code, std::string out, std::string err) {
  CapturedRun run;
  run.exitCode = code;
  run.out = std::move(out);
  run.err = std::move(err);
  return run;
}
}  // namespace

TEST_CASE("a host check turns ssh's and the remote shell's answers into a problem and a hint", "[ssh]") {
  const std::chrono::milliseconds t(3000);
  CHECK_FALSE(interpretHostCheck("h", finished(0, "1.0 abc\n", ""), "/hvdrun", "1.0 abc", t).has_value());

  auto refused = interpretHostCheck("h", finished(255, "", "ssh: connect to host h port 22: Connection refused\r\n"),
                                    "/hvdrun", "1.0 abc", t);
  REQUIRE(refused);
  CHECK(refused->problem == "ssh: connect to host h port 22: Connection refused");
  CHECK(refused->hint.find("-p/--ssh-port") != std::string::npos);

  auto denied = interpretHostCheck("h", finished(255, "", "root@h: Permission denied (publickey).\n"), "/hvdrun", "1.0 abc", t);
  CHECK(denied->hint.find("ssh-copy-id") != std::string::npos);
  auto unknown = interpretHostCheck("h", finished(255, "", "ssh: Could not resolve hostname h: Name or service not known\n"),
                                    "/hvdrun", "1.0 abc", t);
  CHECK(unknown->hint.find("cannot resolve") != std::string::npos);
  auto banner = interpretHostCheck("h", finished(255, "", "Connection timed out during banner exchange\n"), "/hvdrun",
                                   "1.0 abc", t);
  CHECK(banner->hint.find("sshd does not answer") != std::string::npos);
  auto key = interpretHostCheck("h", finished(255, "", "Host key verification failed.\n"), "/hvdrun", "1.0 abc", t);
  CHECK(key->hint.find("host's key") != std::string::npos);

  auto missing = interpretHostCheck("h", finished(127, "", "sh: 1: exec: /hvdrun: not found\n"), "/hvdrun", "1.0 abc", t);
  CHECK(missing->problem == "no hvdrun at /hvdrun there");
  CHECK(missing->hint.find("--remote-hvdrun") != std::string::npos);

  auto other = interpretHostCheck("h", finished(0, "0.9 def\n", ""), "/hvdrun", "1.0 abc", t);
  CHECK(other->problem == "its hvdrun is 0.9 def, this one 1.0 abc");

  CapturedRun hung;
  hung.timedOut = true;
  auto silent = interpretHostCheck("h", hung, "/hvdrun", "1.0 abc", t);
  CHECK(silent->problem == "no answer within 3 s");
}

TEST_CASE("every host's problem is one row of one table with its hint under it", "[ssh]") {
  std::string table = renderHostProblems({{"node1", "no answer within 3 s", "hint one"}, {"n2", "refused", "hint two"}}, 5);
  CHECK(table == "2 of 5 host(s) cannot start ranks; nothing was started:\n"
                 "  HOST   PROBLEM\n"
                 "  node1  no answer within 3 s\n"
                 "           hint: hint one\n"
                 "  n2     refused\n"
                 "           hint: hint two\n");
}

TEST_CASE("ranks on other hosts get this environment without what only describes this machine or login", "[ssh]") {
  auto env = remoteEnvironment({"PATH=/usr/bin", "HOSTNAME=here", "PWD=/x", "SSH_CONNECTION=1 2 3 4",
                                "SSH_AUTH_SOCK=/tmp/a", "BASH_FUNC_f%%=() { :; }", "HVD_RANK=3", "DISPLAY=:0",
                                "LD_LIBRARY_PATH=/opt/lib", "HVDRUN_SSH_COMMAND=ssh -F x"});
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin", "HVD_RANK=3", "LD_LIBRARY_PATH=/opt/lib"});
}

}  // namespace hvd::cli
