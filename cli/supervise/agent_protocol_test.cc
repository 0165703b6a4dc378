// cli/supervise/agent_protocol_test.cc: a job, and every record and order, through its
// encoder and back.
#include "cli/supervise/agent_protocol.h"

#include <catch2/catch.hpp>

namespace hvd::cli {
namespace {

AgentJob sampleJob() {
  AgentJob job;
  job.version = "hvdrun 0.9.0";
  job.host = "node02";
  job.workingDirectory = "/home/u/dir with spaces,and:colons";
  job.shmPrefix = "hvd-0123abcd";
  job.killGrace = std::chrono::milliseconds(2500);
  job.maxLineBytes = 16384;
  job.coordinatorRank = 0;
  job.bindTo = BindTo::kSocket;
  job.stdinRank = 5;
  std::string allBytes;
  for (int c = 1; c < 256; ++c) allBytes += static_cast<char>(c);
  RankEnvironment planned;
  planned.set(RankEnvironment::Part::kIdentity, {"HVD_RANK=4", "HVD_SIZE=6"});
  planned.job({allBytes, "/tmp/flag", "USR2"});
  planned.threads({"OMP_NUM_THREADS=2"});
  job.ranks.push_back({4, {"python", "-c", "print('a\nb')", "", "7:x,", allBytes}, {"X=1\n2", "EMPTY="}, planned});
  job.ranks.push_back({5, {"./train"}, {}, {}});
  return job;
}

// The payload of an encoded job (what follows the header line).
std::string payloadOf(const std::string& encoded) { return encoded.substr(encoded.find('\n') + 1); }

}  // namespace

TEST_CASE("a host agent's job arrives with every byte of arguments and variables unchanged", "[agent]") {
  AgentJob job = sampleJob();
  std::string encoded = encodeAgentJob(job);
  auto length = agentJobLength(encoded.substr(0, encoded.find('\n')));
  REQUIRE(length.isOk());
  REQUIRE(*length == payloadOf(encoded).size());
  auto decoded = decodeAgentJob(payloadOf(encoded));
  REQUIRE(decoded.isOk());
  CHECK(decoded->version == job.version);
  CHECK(decoded->host == job.host);
  CHECK(decoded->workingDirectory == job.workingDirectory);
  CHECK(decoded->shmPrefix == job.shmPrefix);
  CHECK(decoded->killGrace == job.killGrace);
  CHECK(decoded->maxLineBytes == 16384);
  CHECK(decoded->coordinatorRank == std::optional<int>(0));
  CHECK(decoded->bindTo == BindTo::kSocket);
  CHECK(decoded->stdinRank == std::optional<int>(5));
  REQUIRE(decoded->ranks.size() == 2);
  CHECK(decoded->ranks[0].rank == 4);
  CHECK(decoded->ranks[0].argv == job.ranks[0].argv);
  CHECK(decoded->ranks[0].env == job.ranks[0].env);
  CHECK(decoded->ranks[0].planned == job.ranks[0].planned);  // every part, in its place
  CHECK(decoded->ranks[1].argv == std::vector<std::string>{"./train"});
  CHECK(decoded->ranks[1].env.empty());
  CHECK(decoded->ranks[1].planned.variables().empty());
}

TEST_CASE("a host agent's GPU rule and each rank's use of GPUs arrive as sent and a bad rule is refused", "[agent]") {
  AgentJob job = sampleJob();
  CHECK_FALSE(decodeAgentJob(payloadOf(encodeAgentJob(job)))->gpus.has_value());  // hvdrun decided
  job.gpus = GpuRule{3, true, false};
  job.ranks[1].usesGpu = false;
  auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
  REQUIRE(decoded.isOk());
  REQUIRE(decoded->gpus.has_value());
  CHECK(decoded->gpus->perRank == 3);
  CHECK(decoded->gpus->oversubscribe);
  CHECK_FALSE(decoded->gpus->tfConfig);
  CHECK(decoded->ranks[0].usesGpu);
  CHECK_FALSE(decoded->ranks[1].usesGpu);
  std::string payload = payloadOf(encodeAgentJob(job));
  const std::string rule = "5:3 1 0,";
  REQUIRE(payload.find(rule) != std::string::npos);
  for (const char* bad : {"5:0 1 0,", "5:3 2 0,", "4:3 10,", "5:x 1 0,"}) {
    INFO(bad);
    std::string broken = payload;
    broken.replace(broken.find(rule), rule.size(), bad);
    auto refused = decodeAgentJob(broken);
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().message().find("GPU rule") != std::string::npos);
  }
}

TEST_CASE("the GPU positions hvdrun chose for an added rank arrive as sent and bad ones are refused", "[agent]") {
  AgentJob job = sampleJob();
  CHECK_FALSE(decodeAgentJob(payloadOf(encodeAgentJob(job)))->ranks[0].gpuPositions.has_value());
  job.ranks[0].gpuPositions = GpuPositions{{2, 3}, {0, 2, 3}, 1};
  job.ranks[1].gpuPositions = GpuPositions{{1}, {1}, 0};
  auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
  REQUIRE(decoded.isOk());
  CHECK(decoded->ranks[0].gpuPositions == job.ranks[0].gpuPositions);
  CHECK(decoded->ranks[1].gpuPositions == job.ranks[1].gpuPositions);
  std::string payload = payloadOf(encodeAgentJob(job));
  const std::string sent = "5:1 1 0,";
  REQUIRE(payload.find(sent) != std::string::npos);
  // Not three parts; a position that is no number; its own not among what it sees.
  for (const char* bad : {"3:1 1,", "5:x 1 0,", "5:1 2 0,", "6:1 1 -1,", "4:1  0,"}) {
    INFO(bad);
    std::string broken = payload;
    broken.replace(broken.find(sent), sent.size(), bad);
    auto refused = decodeAgentJob(broken);
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().message().find("GPU positions") != std::string::npos);
  }
}

TEST_CASE("the CPU block hvdrun chose for an added rank arrives as sent and bad ones are refused", "[agent]") {
  AgentJob job = sampleJob();
  CHECK_FALSE(decodeAgentJob(payloadOf(encodeAgentJob(job)))->ranks[0].cpuBlock.has_value());
  job.ranks[1].cpuBlock = CpuBlock{1, 2};
  auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
  REQUIRE(decoded.isOk());
  CHECK_FALSE(decoded->ranks[0].cpuBlock.has_value());
  CHECK(decoded->ranks[1].cpuBlock == job.ranks[1].cpuBlock);
  std::string payload = payloadOf(encodeAgentJob(job));
  const std::string sent = "3:1 2,";
  REQUIRE(payload.find(sent) != std::string::npos);
  // Past the last block; no blocks; not numbers; one part.
  for (const char* bad : {"3:2 2,", "3:0 0,", "3:x 2,", "4:-1 2,", "1:1,"}) {
    INFO(bad);
    std::string broken = payload;
    broken.replace(broken.find(sent), sent.size(), bad);
    auto refused = decodeAgentJob(broken);
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().message().find("CPU block") != std::string::npos);
  }
}

TEST_CASE("a host agent's job without a parameter-server chief says so", "[agent]") {
  AgentJob job = sampleJob();
  job.coordinatorRank.reset();
  auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
  REQUIRE(decoded.isOk());
  CHECK_FALSE(decoded->coordinatorRank.has_value());
}

TEST_CASE("a host agent's job whose host reads no stdin says so", "[agent]") {
  AgentJob job = sampleJob();
  job.stdinRank.reset();
  auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
  REQUIRE(decoded.isOk());
  CHECK_FALSE(decoded->stdinRank.has_value());
}

TEST_CASE("every CPU binding reaches the host agent as it was given", "[agent]") {
  for (BindTo bind : {BindTo::kNone, BindTo::kCore, BindTo::kCoreOverloadAllowed, BindTo::kSocket}) {
    AgentJob job = sampleJob();
    job.bindTo = bind;
    auto decoded = decodeAgentJob(payloadOf(encodeAgentJob(job)));
    REQUIRE(decoded.isOk());
    CHECK(decoded->bindTo == bind);
  }
}

TEST_CASE("a truncated or padded host agent job is refused with a reason", "[agent]") {
  std::string payload = payloadOf(encodeAgentJob(sampleJob()));
  for (size_t cut : {size_t{0}, size_t{3}, payload.size() / 2, payload.size() - 1}) {
    auto decoded = decodeAgentJob(payload.substr(0, cut));
    INFO("cut at " << cut);
    REQUIRE_FALSE(decoded.isOk());
    CHECK(decoded.status().message().find("host agent's job") != std::string::npos);
  }
  CHECK_FALSE(decodeAgentJob(payload + "1:x,").isOk());
  std::string badBinding = payload;
  size_t socket = badBinding.find("6:socket,");
  REQUIRE(socket != std::string::npos);
  badBinding.replace(socket, 9, "4:numa,");
  auto refused = decodeAgentJob(badBinding);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().message() == "the host agent's job has a bad CPU binding 'numa'");
  CHECK_FALSE(decodeAgentJob("99999999999999999999999:x,").isOk());
}

TEST_CASE("a host agent refuses a stream that does not start with a job header", "[agent]") {
  CHECK(agentJobLength("hvdrun-agent-job 12").isOk());
  auto wrong = agentJobLength("GET / HTTP/1.1");
  REQUIRE_FALSE(wrong.isOk());
  CHECK(wrong.status().message().find("GET / HTTP/1.1") != std::string::npos);
  CHECK_FALSE(agentJobLength("hvdrun-agent-job -1").isOk());
  CHECK_FALSE(agentJobLength("hvdrun-agent-job 99999999999").isOk());  // over kMaxAgentJobBytes
}

TEST_CASE("signal lines carry a signal number and nothing else", "[agent]") {
  CHECK(agentSignalLine(15) == "signal 15\n");
  CHECK(parseAgentSignal("signal 15") == 15);
  CHECK(parseAgentSignal("signal 10") == 10);
  CHECK_FALSE(parseAgentSignal("signal 0").has_value());
  CHECK_FALSE(parseAgentSignal("signal 99").has_value());
  CHECK_FALSE(parseAgentSignal("signal 15x").has_value());
  CHECK_FALSE(parseAgentSignal("kill 15").has_value());
}

TEST_CASE("a rank failure record read back names the same rank pid code signal time OOM kills and host", "[agent]") {
  RankFailure f;
  f.rank = 7;
  f.pid = 4242;
  f.exitCode = 3;
  f.signal = 0;
  f.when = "2026-11-23T10:15:02+0000";
  f.host = "10.0.0.12";
  auto back = parseAgentFailure(formatAgentFailure(f));
  REQUIRE(back.has_value());
  CHECK(back->rank == 7);
  CHECK(back->pid == 4242);
  CHECK(back->exitCode == 3);
  CHECK(back->signal == 0);
  CHECK(back->when == f.when);
  CHECK(back->host == f.host);
  CHECK(back->oomKillsOnHost == 0);
  f.signal = 11;
  f.oomKillsOnHost = 3;
  CHECK(parseAgentFailure(formatAgentFailure(f))->signal == 11);
  CHECK(parseAgentFailure(formatAgentFailure(f))->oomKillsOnHost == 3);
  CHECK(back->frozenSeconds == -1);
  f.frozenSeconds = 30;  // the agent killed it frozen after its peers' timeout
  CHECK(parseAgentFailure(formatAgentFailure(f))->frozenSeconds == 30);
  // An agent from before the OOM count and the frozen seconds says nothing of them.
  CHECK(parseAgentFailure("hvdrun-agent: failed rank=1 pid=1 code=0 signal=9 when=t host=h")->oomKillsOnHost == 0);
  CHECK(parseAgentFailure("hvdrun-agent: failed rank=1 pid=1 code=0 signal=9 when=t host=h")->frozenSeconds == -1);
  CHECK_FALSE(parseAgentFailure("[3]<stderr>:hvdrun-agent: failed rank=1").has_value());
  CHECK_FALSE(parseAgentFailure("hvdrun-agent: failed rank=x pid=1 code=1 signal=0 when=t host=h").has_value());
}

namespace {

// Everything the reader makes of `stream` fed in pieces of `piece` bytes.
std::vector<AgentOrder> readInPieces(const std::string& stream, size_t piece) {
  AgentOrderReader reader;
  std::vector<AgentOrder> orders;
  for (size_t at = 0; at < stream.size(); at += piece) {
    for (AgentOrder& o : reader.feed(std::string_view(stream).substr(at, piece))) orders.push_back(std::move(o));
  }
  return orders;
}

}  // namespace

TEST_CASE("signals and forwarded input come out of the connection whole however its bytes are cut", "[agent]") {
  std::string binary;
  for (int i = 0; i < 3000; ++i) binary += static_cast<char>(i * 7);  // newlines and NULs among them
  const std::string stream = agentSignalLine(10) + agentInputFrame("first line\n") + agentInputFrame(binary) +
                             "unknown order from a newer hvdrun\n" + agentSignalLine(15) + agentInputFrame("") +
                             std::string(kAgentInputEnd);
  for (size_t piece : {size_t{1}, size_t{2}, size_t{7}, size_t{4096}, stream.size()}) {
    INFO("pieces of " << piece);
    auto orders = readInPieces(stream, piece);
    std::string input;
    std::vector<int> signals;
    bool ended = false;
    for (const AgentOrder& o : orders) {
      REQUIRE(o.kind != AgentOrder::Kind::kBroken);
      CHECK_FALSE(ended);  // nothing after the end
      if (o.kind == AgentOrder::Kind::kSignal) signals.push_back(o.signal);
      if (o.kind == AgentOrder::Kind::kInput) input += o.input;
      if (o.kind == AgentOrder::Kind::kInputEnd) ended = true;
    }
    CHECK(signals == std::vector<int>{10, 15});
    CHECK(input == "first line\n" + binary);
    CHECK(ended);
  }
}

TEST_CASE("an input frame over the limit or a line that never ends breaks the connection's stream", "[agent]") {
  AgentOrderReader tooLong;
  auto orders = tooLong.feed("input " + std::to_string(kMaxAgentInputFrame + 1) + "\nxyz");
  REQUIRE(orders.size() == 1);
  CHECK(orders[0].kind == AgentOrder::Kind::kBroken);
  CHECK(tooLong.feed(agentSignalLine(15)).empty());  // broken stays broken
  AgentOrderReader endless;
  auto noEnd = endless.feed(std::string(100, 'x'));
  REQUIRE(noEnd.size() == 1);
  CHECK(noEnd[0].kind == AgentOrder::Kind::kBroken);
  AgentOrderReader badLength;
  auto bad = badLength.feed("input 12x\n");
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].kind == AgentOrder::Kind::kBroken);
}

TEST_CASE("the count of input a rank's pipe took reads back as sent and other lines are not counts", "[agent]") {
  CHECK(formatAgentInputTaken(65536) == "hvdrun-agent: input-taken 65536");
  CHECK(parseAgentInputTaken(formatAgentInputTaken(0)) == std::optional<std::uint64_t>(0));
  CHECK(parseAgentInputTaken(formatAgentInputTaken(1ULL << 40)) == std::optional<std::uint64_t>(1ULL << 40));
  CHECK_FALSE(parseAgentInputTaken("hvdrun-agent: input-taken").has_value());
  CHECK_FALSE(parseAgentInputTaken("hvdrun-agent: input-taken -1").has_value());
  CHECK_FALSE(parseAgentInputTaken("[0]<stderr>:hvdrun-agent: input-taken 5").has_value());
  CHECK(agentInputFrame("abc") == "input 3\nabc");
}

TEST_CASE("an elastic job's clean rank end reads back and nothing else reads as one", "[agent]") {
  CHECK(formatAgentRankEnd(3) == "hvdrun-agent: ended rank=3");
  CHECK(parseAgentRankEnd(formatAgentRankEnd(3)) == std::optional<int>(3));
  CHECK(parseAgentRankEnd(formatAgentRankEnd(0)) == std::optional<int>(0));
  CHECK_FALSE(parseAgentRankEnd("hvdrun-agent: ended rank="));
  CHECK_FALSE(parseAgentRankEnd("hvdrun-agent: ended rank=x"));
  CHECK_FALSE(parseAgentRankEnd("hvdrun-agent: ended rank=3 "));
  CHECK_FALSE(parseAgentRankEnd("[3]<stderr>:hvdrun-agent: ended rank=3"));
  CHECK_FALSE(parseAgentRankEnd("hvdrun-agent: failed rank=1 pid=1 code=0 signal=9 when=t host=h"));
}

TEST_CASE("an elastic job's order to stop one rank reads back with its rank among signals and input", "[agent]") {
  const std::string stream = agentSignalLine(10) + agentStopRankLine(3) + agentInputFrame("stop 4\n") +
                             agentStopRankLine(12) + "stop -1\nstop x\nstop \n";
  for (size_t piece : {size_t{1}, size_t{5}, stream.size()}) {
    INFO("pieces of " << piece);
    std::vector<int> stopped;
    std::string input;
    for (const AgentOrder& o : readInPieces(stream, piece)) {
      REQUIRE(o.kind != AgentOrder::Kind::kBroken);
      if (o.kind == AgentOrder::Kind::kStopRank) stopped.push_back(o.rank);
      if (o.kind == AgentOrder::Kind::kInput) input += o.input;
    }
    CHECK(stopped == std::vector<int>{3, 12});  // forwarded input is never an order
    CHECK(input == "stop 4\n");
  }
  CHECK(agentStopRankLine(7) == "stop 7\n");
}

TEST_CASE("a host agent's counts of its GPUs and CPUs arrive as sent and other lines are not taken for them", "[agent]") {
  for (HostCounts c : {HostCounts{0, 1}, HostCounts{8, 224}, HostCounts{3, 2}}) {
    std::string line = agentCountsLine(c);
    REQUIRE(line.back() == '\n');
    line.pop_back();
    CHECK(parseAgentCounts(line) == c);
  }
  CHECK(agentCountsLine({4, 64}) == "hvdrun-agent: counts gpus=4 cpus=64\n");
  for (const char* bad : {"", "hvdrun-agent: counts", "hvdrun-agent: counts gpus=4", "hvdrun-agent: counts gpus=4 cpus=",
                          "hvdrun-agent: counts gpus=-1 cpus=2", "hvdrun-agent: counts gpus=4 cpus=2 more",
                          "hvdrun-agent: counts cpus=2 gpus=4", "hvdrun-agent: hello 1.0 abc",
                          "hvdrun-agent: counts gpus=99999999999 cpus=2"}) {
    INFO(bad);
    CHECK(!parseAgentCounts(bad));
  }
}

TEST_CASE("an agent's pid record is read back and anything else is not one", "[agent]") {
  CHECK(parseAgentPid(formatAgentPid(4242)) == 4242L);
  CHECK_FALSE(parseAgentPid("hvdrun-agent: pid 1"));  // never init's
  CHECK_FALSE(parseAgentPid("hvdrun-agent: pid x12"));
  CHECK_FALSE(parseAgentPid(std::string(kAgentAlive)));
}

}  // namespace hvd::cli
