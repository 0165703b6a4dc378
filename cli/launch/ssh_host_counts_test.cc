// cli/launch/ssh_host_counts_test.cc: one host's answer to `hvdrun host-agent --count` read
// into its counts or into the hosts' table's words.
#include "cli/launch/ssh_host_counts.h"

#include <catch2/catch.hpp>

#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {
namespace {

CapturedRun answered(const std::string& out, int exitCode = 0, const std::string& err = "") {
  CapturedRun run;
  run.exitCode = exitCode;
  run.out = out;
  run.err = err;
  return run;
}

const std::chrono::milliseconds kTimeout{30000};

}  // namespace

TEST_CASE("a host's count is read from its answer and anything else becomes its line in the hosts' table", "[ssh]") {
  const std::string version = agentVersion();
  auto counts =
      interpretHostCount("a", answered(agentHelloLine() + agentCountsLine({4, 32})), "/opt/hvdrun", version, kTimeout);
  REQUIRE(std::holds_alternative<HostCounts>(counts));
  CHECK(std::get<HostCounts>(counts) == HostCounts{4, 32});

  auto problemOf = [&](const CapturedRun& run) {
    auto result = interpretHostCount("a", run, "/opt/hvdrun", version, kTimeout);
    REQUIRE(std::holds_alternative<HostProblem>(result));
    return std::get<HostProblem>(result);
  };
  CHECK(problemOf(answered("", 127)).problem == "no hvdrun at /opt/hvdrun there");
  CHECK(problemOf(answered("", 255, "ssh: connect to host a port 22: Connection refused\n")).problem ==
        "ssh: connect to host a port 22: Connection refused");
  CHECK(problemOf(answered("hvdrun-agent: hello 0.0.1 0123abc\n" + agentCountsLine({4, 32}))).problem ==
        "its hvdrun is 0.0.1 0123abc, this one " + version);
  CHECK(problemOf(answered(agentHelloLine())).problem == "its hvdrun said hello but did not count its GPUs and CPUs");
  CapturedRun hung;
  hung.timedOut = true;
  CHECK(problemOf(hung).problem == "no answer within 30 s");
  // An hvdrun without --count refuses the argument: its own error is named.
  CHECK(problemOf(answered("", 2, "hvdrun: error: host-agent: unexpected argument '--count'\n")).problem ==
        "/opt/hvdrun failed with exit code 2 there: hvdrun: error: host-agent: unexpected argument '--count'");
  CHECK(agentCountCommandLine("/opt/my hvdrun") == "exec '/opt/my hvdrun' host-agent --count");
}

}  // namespace hvd::cli
