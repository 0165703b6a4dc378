// cli/supervise/agent_protocol.h: what hvdrun and a host agent (`hvdrun host-agent`, started
// over ssh, one per host) say to each other.
//
// agent -> hvdrun first, on stdout: "hvdrun-agent: hello <agentVersion()>\n". hvdrun sends no
// job anywhere before every host's agent has said it: the check and the launch share one
// connection per host. (`hvdrun host-agent --count`, asked before the plan when
// --nproc-per-node gpu, cpu or auto needs the host's counts, says its hello, then
// agentCountsLine, and ends.)
//
// hvdrun -> agent, on the agent's stdin (the ssh channel): then the host's job, as
// "hvdrun-agent-job <length>\n" and that many bytes of netstrings ("<len>:<bytes>,"), so any
// byte of an argument or a variable arrives unchanged and nothing (the secret key above all)
// appears on a command line; then, while the ranks run, one "signal <number>\n" per signal
// hvdrun passes on, and, to the host whose rank reads hvdrun's stdin (--stdin), that input
// as "input <length>\n<bytes>" frames and "input-end\n" at its end; in an elastic job whose
// discovery script gives the host fewer slots, "stop <rank>\n" for each rank to go (the agent
// stops it as no longer needed, SIGTERM then SIGKILL after the kill grace, and reports
// nothing of its end). EOF means hvdrun or the connection is gone: the agent stops every
// rank.
//
// hvdrun -> agent, also: kHvdrunAlive every second once the job is in (below).
//
// agent -> hvdrun: each rank line as "[rank]<stdout>:text" on stdout or "[rank]<stderr>:text"
// on stderr (the supervisor's own prefix), and on stderr, records hvdrun reads instead of
// printing: the moment a rank fails, formatAgentFailure's; as the stdin rank's pipe takes
// forwarded input, the count so far (formatAgentInputTaken), and kAgentInputClosed once it
// takes no more (the rank closed its stdin or ended).
//
// Flow control: hvdrun sends at most kAgentInputWindow bytes of input the rank's pipe has not
// taken, so a rank that never reads its stdin holds hvdrun's reading, not the agent's memory,
// and the connection stays free for the signals.
#pragma once

#include <cstdint>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/supervise/line_splitter.h"
#include "cli/supervise/rank_environment.h"
#include "cli/supervise/rank_failure.h"
#include "cli/plan/cpu_binding.h"
#include "cli/plan/host_gpus.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// A rank an elastic job adds over ssh, on a host whose devices only its agent knows: its GPUs
// as positions in that host's list of devices (its CUDA_VISIBLE_DEVICES, else the driver's),
// which hvdrun chose among those no running rank there holds (elastic_gpus.h), the positions
// it sees (CUDA_VISIBLE_DEVICES), and where its own start among them (HVD_LOCAL_GPU).
struct GpuPositions {
  std::vector<int> own, visible;
  int localGpu = 0;
  bool operator==(const GpuPositions&) const = default;
};

// A rank an elastic job adds under --bind-to: block `index` of the `of` its host's cores are
// split into (cpuBindings(bind, of, ...)), which hvdrun chose among those no running rank
// there holds (elastic_cpus.h).
struct CpuBlock {
  int index = 0;
  int of = 1;
  bool operator==(const CpuBlock&) const = default;
};

struct AgentRank {
  int rank = 0;
  std::vector<std::string> argv;  // the program and its arguments, as the user gave them
  std::vector<std::string> env;   // what the rank inherits, "NAME=value"
  // The variables hvdrun gives it, by part; the agent sets its host's parts (GPUs where it
  // shares them out, threads, torch's error file) and lays them over env.
  RankEnvironment planned;
  bool usesGpu = true;            // with AgentJob::gpus: a worker or chief (not a TF ps or evaluator)
  std::optional<GpuPositions> gpuPositions = std::nullopt;  // unset: as AgentJob::gpus says
  std::optional<CpuBlock> cpuBlock = std::nullopt;  // unset: as AgentJob::bindTo splits the host
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
  // --stdin: the rank of this host that reads hvdrun's stdin, forwarded; every other rank
  // here reads an empty one.
  std::optional<int> stdinRank;
  // A host whose GPUs hvdrun cannot know (another -H host): the agent shares out the devices
  // it finds there (its CUDA_VISIBLE_DEVICES, else the driver's) by the plan's rule
  // (host_gpus.h) and sets each rank's CUDA_VISIBLE_DEVICES and HVD_LOCAL_GPU. Unset: the
  // ranks' variables are as hvdrun gives them.
  std::optional<GpuRule> gpus;
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

// `hvdrun host-agent --count` (hvdrun's count of the hosts for --nproc-per-node gpu, cpu or
// auto): the hello, then this line, and the agent ends.
std::string agentCountsLine(const HostCounts& counts);  // "hvdrun-agent: counts gpus=4 cpus=64\n"
std::optional<HostCounts> parseAgentCounts(std::string_view line);  // the line without '\n'

std::string agentSignalLine(int signal);         // "signal 15\n"
std::string agentStopRankLine(int rank);         // "stop 3\n"
std::optional<int> parseAgentSignal(std::string_view line);  // the line without '\n'

inline constexpr size_t kAgentInputWindow = size_t{128} << 10;
inline constexpr size_t kMaxAgentInputFrame = size_t{64} << 10;
std::string agentInputFrame(std::string_view bytes);  // "input 5\nhello" (at most kMaxAgentInputFrame)
inline constexpr std::string_view kAgentInputEnd = "input-end\n";

// What the agent's connection brings once the job is in: signals and forwarded input, cut
// out of the byte stream however it arrives. Unknown lines are skipped (as a newer hvdrun's
// would be); a frame longer than kMaxAgentInputFrame, or a line without an end within 64
// bytes, is a broken stream.
struct AgentOrder {
  enum class Kind { kSignal, kInput, kInputEnd, kStopRank, kBroken };
  Kind kind = Kind::kSignal;
  int signal = 0;
  std::string input;
  int rank = -1;  // kStopRank's
};
class AgentOrderReader {
 public:
  std::vector<AgentOrder> feed(std::string_view bytes);

 private:
  std::string line_;
  size_t inputLeft_ = 0;  // bytes of the current input frame still to come
  bool inInput_ = false;
  bool broken_ = false;
};

std::string formatAgentInputTaken(std::uint64_t total);  // "hvdrun-agent: input-taken 65536"
std::optional<std::uint64_t> parseAgentInputTaken(std::string_view line);
inline constexpr std::string_view kAgentInputClosed = "hvdrun-agent: input-closed";

// "hvdrun-agent: failed rank=3 pid=812 code=1 signal=0 when=2026-11-23T10:15:02+0000 host=node02"
std::string formatAgentFailure(const RankFailure& failure);
std::optional<RankFailure> parseAgentFailure(std::string_view line);

// Once its job is in: the agent's pid on its host ("hvdrun-agent: pid 4242"), so that hvdrun
// can kill it there when it stops answering; then, while its ranks run, kAgentAlive every
// kAgentHeartbeatEvery. An agent hvdrun hears nothing from for kAgentSilenceLimit while it
// reads (stopped by SIGSTOP or a debugger, its host hung or cut off from this one) is lost: the job fails naming
// its host, and hvdrun kills it there over ssh; its guardian then takes its ranks.
std::string formatAgentPid(long pid);
std::optional<long> parseAgentPid(std::string_view line);
inline constexpr std::string_view kAgentAlive = "hvdrun-agent: alive";
inline constexpr std::chrono::milliseconds kAgentHeartbeatEvery{1000};
inline constexpr std::chrono::milliseconds kAgentSilenceLimit{5000};
// The other way: hvdrun writes kHvdrunAlive to every agent whose job is in, every
// kAgentHeartbeatEvery. An agent that reads nothing from hvdrun for kHvdrunSilenceLimit,
// unless hvdrun has it hold its ranks (Ctrl-Z), takes it as the connection's end: it ends
// and its guardian stops its ranks, so a host cut off from hvdrun's cleans itself up.
inline constexpr std::string_view kHvdrunAlive = "alive\n";
inline constexpr std::chrono::milliseconds kHvdrunSilenceLimit{10000};

// Elastic jobs (--min-np) only: a rank that ended by itself without failing, so that hvdrun
// leaves it out of the job's next world: "hvdrun-agent: ended rank=3".
std::string formatAgentRankEnd(int rank);
std::optional<int> parseAgentRankEnd(std::string_view line);

}  // namespace hvd::cli
