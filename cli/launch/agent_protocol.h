// cli/launch/agent_protocol.h: what hvdrun and a host agent (`hvdrun host-agent`, started
// over ssh, one per host) say to each other.
//
// agent -> hvdrun first, on stdout: "hvdrun-agent: hello <agentVersion()>\n". hvdrun sends no
// job anywhere before every host's agent has said it: the check and the launch share one
// connection per host.
//
// hvdrun -> agent, on the agent's stdin (the ssh channel): then the host's job, as
// "hvdrun-agent-job <length>\n" and that many bytes of netstrings ("<len>:<bytes>,"), so any
// byte of an argument or a variable arrives unchanged and nothing (the secret key above all)
// appears on a command line; then, while the ranks run, one "signal <number>\n" per signal
// hvdrun passes on. EOF means hvdrun or the connection is gone: the agent stops every rank.
//
// agent -> hvdrun: each rank line as "[rank]<stdout>:text" on stdout or "[rank]<stderr>:text"
// on stderr (the supervisor's own prefix), and on stderr, the moment a rank fails, one
// record hvdrun reads instead of printing (formatAgentFailure).
#pragma once

#include <cstdint>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/launch/line_splitter.h"
#include "cli/launch/rank_failure.h"
#include "cli/plan/cpu_binding.h"
#include "runtime/common/status.h"

namespace hvd::cli {

struct AgentRank {
  int rank = 0;
  std::vector<std::string> argv;  // the program and its arguments, as the user gave them
  std::vector<std::string> env;   // the complete environment, "NAME=value"
};

struct AgentJob {
  std::string version;           // hvdrun's: an agent of another version refuses the job
  std::string host;              // the plan's name for this host (reports use it)
  std::string workingDirectory;  // hvdrun's, where the ranks start
  std::string shmPrefix;         // the job's /dev/shm names (shm_names.h), removed at the end
  std::chrono::milliseconds killGrace{5000};
  std::uint64_t maxLineBytes = LineSplitter::kDefaultMaxLine;  // --max-line-kb: where the agent cuts a rank's line
  // A ParameterServerStrategy job's chief (whichever host runs it): the job ends with it
  // (task_shim.h's rule, which every agent follows through the rendezvous).
  std::optional<int> coordinatorRank;
  // --bind-to: the agent splits its own host's cores among the ranks it starts (in the
  // order given, which is their local ranks').
  BindTo bindTo = BindTo::kNone;
  std::vector<AgentRank> ranks;
};

// This build's identity ("0.9.0 abc1234"): hvdrun and the agents on other hosts must match,
// or the two sides may not speak the same protocol.
std::string agentVersion();

inline constexpr std::string_view kAgentJobHeader = "hvdrun-agent-job ";
// The largest job a header may announce; a longer one is a broken or hostile stream.
inline constexpr size_t kMaxAgentJobBytes = size_t{256} << 20;

// The header line and the payload.
std::string encodeAgentJob(const AgentJob& job);
// The payload only (the bytes after the header line); kInvalidArgument names what is wrong.
Result<AgentJob> decodeAgentJob(std::string_view payload);
// The payload's length from a header line (without its '\n').
Result<size_t> agentJobLength(std::string_view headerLine);

std::string agentHelloLine();  // "hvdrun-agent: hello <agentVersion()>\n"
// The version a hello line (without '\n') announces; nullopt for any other line.
std::optional<std::string> parseAgentHello(std::string_view line);

std::string agentSignalLine(int signal);         // "signal 15\n"
std::optional<int> parseAgentSignal(std::string_view line);  // the line without '\n'

// "hvdrun-agent: failed rank=3 pid=812 code=1 signal=0 when=2026-11-23T10:15:02+0000 host=node02"
std::string formatAgentFailure(const RankFailure& failure);
std::optional<RankFailure> parseAgentFailure(std::string_view line);

}  // namespace hvd::cli
