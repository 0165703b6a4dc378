// cli/supervise/agent_protocol.cc: netstrings for the job, one-line records for the rest.
#include "cli/supervise/agent_protocol.h"

#include <algorithm>
#include <charconv>

#include "cli/build_info.h"

namespace hvd::cli {
namespace {

void put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
  out += ',';
}

bool parseNumber(std::string_view text, long long& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// Reads netstrings off the front of a payload.
class Fields {
 public:
  explicit Fields(std::string_view data) : data_(data) {}

  Result<std::string_view> next(const char* what) {
    size_t colon = data_.find(':');
    long long length = 0;
    if (colon == std::string_view::npos || colon > 20 || !parseNumber(data_.substr(0, colon), length) || length < 0 ||
        static_cast<size_t>(length) > data_.size() - colon - 1 || data_.size() < colon + 2 + static_cast<size_t>(length) ||
        data_[colon + 1 + static_cast<size_t>(length)] != ',') {
      return invalidArgument(std::string("the host agent's job is malformed at ") + what);
    }
    std::string_view field = data_.substr(colon + 1, static_cast<size_t>(length));
    data_.remove_prefix(colon + 2 + static_cast<size_t>(length));
    return field;
  }

  Result<long long> number(const char* what, long long max) {
    auto field = next(what);
    if (!field) return field.status();
    long long value = 0;
    if (!parseNumber(*field, value) || value < 0 || value > max) {
      return invalidArgument(std::string("the host agent's job has a bad ") + what + " '" + std::string(*field) + "'");
    }
    return value;
  }

  bool done() const { return data_.empty(); }

 private:
  std::string_view data_;
};

// "name=value" among space-separated words; nullopt when missing.
std::optional<std::string_view> word(std::string_view line, std::string_view name) {
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    std::string_view w = line.substr(at, end - at);
    if (w.size() > name.size() && w.substr(0, name.size()) == name && w[name.size()] == '=') {
      return w.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return std::nullopt;
}

constexpr std::string_view kFailurePrefix = "hvdrun-agent: failed ";
constexpr std::string_view kRankEndPrefix = "hvdrun-agent: ended ";

}  // namespace

std::string agentVersion() { return std::string(build_info::kVersion) + " " + build_info::kGitCommit; }

namespace {

// "2,3 0,2,3 1": own, visible, where its own start; empty: none chosen.
std::string positionsText(const std::optional<GpuPositions>& p) {
  if (!p) return "";
  auto list = [](const std::vector<int>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
    return out;
  };
  return list(p->own) + " " + list(p->visible) + " " + std::to_string(p->localGpu);
}

Result<std::optional<GpuPositions>> parsePositions(std::string_view text) {
  if (text.empty()) return std::optional<GpuPositions>();
  auto bad = [text] { return invalidArgument("the host agent's job has bad GPU positions '" + std::string(text) + "'"); };
  constexpr long long kMaxPosition = 1 << 16;
  auto list = [](std::string_view part, std::vector<int>& out) {
    while (!part.empty()) {
      const size_t comma = part.find(',');
      long long n = 0;
      if (!parseNumber(part.substr(0, comma), n) || n < 0 || n >= kMaxPosition) return false;
      out.push_back(static_cast<int>(n));
      if (comma == std::string_view::npos) break;
      part.remove_prefix(comma + 1);
    }
    return !out.empty();
  };
  const size_t first = text.find(' '), second = first == std::string_view::npos ? first : text.find(' ', first + 1);
  if (second == std::string_view::npos) return bad();
  GpuPositions p;
  long long at = 0;
  if (!list(text.substr(0, first), p.own) || !list(text.substr(first + 1, second - first - 1), p.visible) ||
      !parseNumber(text.substr(second + 1), at) || at < 0 || at + p.own.size() > p.visible.size()) {
    return bad();
  }
  p.localGpu = static_cast<int>(at);
  // Its own are what it sees from localGpu on: anything else is no list hvdrun made.
  if (!std::equal(p.own.begin(), p.own.end(), p.visible.begin() + at)) return bad();
  return std::optional<GpuPositions>(std::move(p));
}

// "1 4": block 1 of 4; empty: none chosen.
std::string blockText(const std::optional<CpuBlock>& b) {
  return b ? std::to_string(b->index) + " " + std::to_string(b->of) : "";
}

Result<std::optional<CpuBlock>> parseBlock(std::string_view text) {
  if (text.empty()) return std::optional<CpuBlock>();
  constexpr long long kMaxBlocks = 1 << 16;
  const size_t space = text.find(' ');
  long long index = 0, of = 0;
  if (space == std::string_view::npos || !parseNumber(text.substr(0, space), index) ||
      !parseNumber(text.substr(space + 1), of) || of < 1 || of > kMaxBlocks || index < 0 || index >= of) {
    return invalidArgument("the host agent's job has a bad CPU block '" + std::string(text) + "'");
  }
  return std::optional<CpuBlock>(CpuBlock{static_cast<int>(index), static_cast<int>(of)});
}

}  // namespace

std::string encodeAgentJob(const AgentJob& job) {
  std::string payload;
  put(payload, job.version);
  put(payload, job.host);
  put(payload, job.workingDirectory);
  put(payload, job.shmPrefix);
  put(payload, std::to_string(job.killGrace.count()));
  put(payload, std::to_string(job.maxLineBytes));
  put(payload, job.coordinatorRank ? std::to_string(*job.coordinatorRank) : "");  // empty: none
  put(payload, bindToName(job.bindTo));
  put(payload, job.stdinRank ? std::to_string(*job.stdinRank) : "");  // empty: none here
  // "perRank oversubscribe tfConfig", or empty: hvdrun decided the GPUs.
  put(payload, job.gpus ? std::to_string(job.gpus->perRank) + " " + (job.gpus->oversubscribe ? "1" : "0") + " " +
                              (job.gpus->tfConfig ? "1" : "0")
                        : "");
  put(payload, std::to_string(job.ranks.size()));
  for (const AgentRank& r : job.ranks) {
    put(payload, std::to_string(r.rank));
    put(payload, r.usesGpu ? "1" : "0");
    put(payload, positionsText(r.gpuPositions));
    put(payload, blockText(r.cpuBlock));
    put(payload, std::to_string(r.argv.size()));
    for (const auto& a : r.argv) put(payload, a);
    put(payload, std::to_string(r.env.size()));
    for (const auto& e : r.env) put(payload, e);
    for (size_t part = 0; part < RankEnvironment::kParts; ++part) {
      const auto& vars = r.planned.part(static_cast<RankEnvironment::Part>(part));
      put(payload, std::to_string(vars.size()));
      for (const auto& v : vars) put(payload, v);
    }
  }
  return std::string(kAgentJobHeader) + std::to_string(payload.size()) + "\n" + payload;
}

Result<size_t> agentJobLength(std::string_view header) {
  long long length = 0;
  if (header.substr(0, kAgentJobHeader.size()) != kAgentJobHeader ||
      !parseNumber(header.substr(kAgentJobHeader.size()), length) || length < 0 ||
      static_cast<size_t>(length) > kMaxAgentJobBytes) {
    std::string shown(header.substr(0, 80));
    return invalidArgument("the host agent expected a job from hvdrun, got '" + shown + "'")
        .withHint("host-agent is started by hvdrun over ssh, not by hand");
  }
  return static_cast<size_t>(length);
}

Result<AgentJob> decodeAgentJob(std::string_view payload) {
  Fields f(payload);
  constexpr long long kMaxCount = 1 << 24;
  auto text = [&f](std::string& target, const char* what) -> Status {
    auto v = f.next(what);
    if (!v) return v.status();
    target = std::string(*v);
    return Status::ok();
  };
  auto number = [&f](long long& target, const char* what, long long max) -> Status {
    auto v = f.number(what, max);
    if (!v) return v.status();
    target = *v;
    return Status::ok();
  };
  AgentJob job;
  long long grace = 0, ranks = 0;
  HVD_RETURN_IF_ERROR(text(job.version, "the version"));
  HVD_RETURN_IF_ERROR(text(job.host, "the host"));
  HVD_RETURN_IF_ERROR(text(job.workingDirectory, "the working directory"));
  HVD_RETURN_IF_ERROR(text(job.shmPrefix, "the shared-memory prefix"));
  HVD_RETURN_IF_ERROR(number(grace, "kill grace", 1LL << 40));
  job.killGrace = std::chrono::milliseconds(grace);
  long long maxLine = 0;
  HVD_RETURN_IF_ERROR(number(maxLine, "line cap", 1LL << 40));
  if (maxLine < 1) return invalidArgument("the job's line cap must be at least 1 byte");
  job.maxLineBytes = static_cast<std::uint64_t>(maxLine);
  // A rank, or empty for none.
  auto optionalRank = [&f](std::optional<int>& target, const char* what) -> Status {
    auto field = f.next((std::string("the ") + what).c_str());
    if (!field) return field.status();
    if (field->empty()) return Status::ok();
    long long rank = 0;
    if (!parseNumber(*field, rank) || rank < 0 || rank >= kMaxCount) {
      return invalidArgument(std::string("the host agent's job has a bad ") + what + " '" + std::string(*field) + "'");
    }
    target = static_cast<int>(rank);
    return Status::ok();
  };
  HVD_RETURN_IF_ERROR(optionalRank(job.coordinatorRank, "coordinator rank"));
  auto bind = f.next("the CPU binding");
  if (!bind) return bind.status();
  auto bindTo = parseBindTo(*bind);
  if (!bindTo) return invalidArgument("the host agent's job has a bad CPU binding '" + std::string(*bind) + "'");
  job.bindTo = *bindTo;
  HVD_RETURN_IF_ERROR(optionalRank(job.stdinRank, "stdin rank"));
  auto gpus = f.next("the GPU rule");
  if (!gpus) return gpus.status();
  if (!gpus->empty()) {
    long long perRank = 0;
    std::string_view rule = *gpus;
    const size_t space = rule.find(' ');
    if (space == std::string_view::npos || !parseNumber(rule.substr(0, space), perRank) || perRank < 1 ||
        perRank > kMaxCount || rule.size() != space + 4 || rule[space + 2] != ' ' ||
        (rule[space + 1] != '0' && rule[space + 1] != '1') || (rule[space + 3] != '0' && rule[space + 3] != '1')) {
      return invalidArgument("the host agent's job has a bad GPU rule '" + std::string(rule) + "'");
    }
    job.gpus = GpuRule{static_cast<int>(perRank), rule[space + 1] == '1', rule[space + 3] == '1'};
  }
  HVD_RETURN_IF_ERROR(number(ranks, "rank count", kMaxCount));
  for (long long i = 0; i < ranks; ++i) {
    AgentRank r;
    long long rank = 0, argc = 0, envc = 0;
    HVD_RETURN_IF_ERROR(number(rank, "rank", kMaxCount));
    r.rank = static_cast<int>(rank);
    long long usesGpu = 0;
    HVD_RETURN_IF_ERROR(number(usesGpu, "GPU use", 1));
    r.usesGpu = usesGpu == 1;
    auto positionsField = f.next("the GPU positions");
    if (!positionsField) return positionsField.status();
    auto positions = parsePositions(*positionsField);
    if (!positions) return positions.status();
    r.gpuPositions = std::move(*positions);
    auto blockField = f.next("the CPU block");
    if (!blockField) return blockField.status();
    auto block = parseBlock(*blockField);
    if (!block) return block.status();
    r.cpuBlock = *block;
    HVD_RETURN_IF_ERROR(number(argc, "argument count", kMaxCount));
    for (long long a = 0; a < argc; ++a) HVD_RETURN_IF_ERROR(text(r.argv.emplace_back(), "an argument"));
    HVD_RETURN_IF_ERROR(number(envc, "variable count", kMaxCount));
    for (long long e = 0; e < envc; ++e) HVD_RETURN_IF_ERROR(text(r.env.emplace_back(), "a variable"));
    for (size_t part = 0; part < RankEnvironment::kParts; ++part) {
      long long count = 0;
      HVD_RETURN_IF_ERROR(number(count, "planned variable count", kMaxCount));
      std::vector<std::string> vars(static_cast<size_t>(count));
      for (std::string& v : vars) HVD_RETURN_IF_ERROR(text(v, "a planned variable"));
      r.planned.set(static_cast<RankEnvironment::Part>(part), std::move(vars));
    }
    if (r.argv.empty()) return invalidArgument("the host agent's job gives rank " + std::to_string(rank) + " no program");
    job.ranks.push_back(std::move(r));
  }
  if (!f.done()) return invalidArgument("the host agent's job has bytes after its last rank");
  return job;
}

constexpr std::string_view kHelloPrefix = "hvdrun-agent: hello ";

std::string agentHelloLine() { return std::string(kHelloPrefix) + agentVersion() + "\n"; }

std::optional<std::string> parseAgentHello(std::string_view line) {
  if (line.substr(0, kHelloPrefix.size()) != kHelloPrefix) return std::nullopt;
  return std::string(line.substr(kHelloPrefix.size()));
}

constexpr std::string_view kCountsPrefix = "hvdrun-agent: counts ";

std::string agentCountsLine(const HostCounts& counts) {
  return std::string(kCountsPrefix) + "gpus=" + std::to_string(counts.gpus) + " cpus=" + std::to_string(counts.cpus) +
         "\n";
}

std::optional<HostCounts> parseAgentCounts(std::string_view line) {
  if (line.substr(0, kCountsPrefix.size()) != kCountsPrefix) return std::nullopt;
  line.remove_prefix(kCountsPrefix.size());
  auto field = [&](std::string_view name) -> std::optional<int> {
    if (line.substr(0, name.size()) != name) return std::nullopt;
    line.remove_prefix(name.size());
    int value = -1;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
    if (ec != std::errc() || value < 0) return std::nullopt;
    line.remove_prefix(static_cast<size_t>(end - line.data()));
    return value;
  };
  auto gpus = field("gpus=");
  if (!gpus || line.substr(0, 1) != " ") return std::nullopt;
  line.remove_prefix(1);
  auto cpus = field("cpus=");
  if (!cpus || !line.empty()) return std::nullopt;
  return HostCounts{*gpus, *cpus};
}

std::string agentSignalLine(int signal) { return "signal " + std::to_string(signal) + "\n"; }

std::optional<int> parseAgentSignal(std::string_view line) {
  constexpr std::string_view kPrefix = "signal ";
  long long sig = 0;
  if (line.substr(0, kPrefix.size()) != kPrefix || !parseNumber(line.substr(kPrefix.size()), sig) || sig < 1 ||
      sig > 64) {
    return std::nullopt;
  }
  return static_cast<int>(sig);
}

std::string agentStopRankLine(int rank) { return "stop " + std::to_string(rank) + "\n"; }

std::string agentInputFrame(std::string_view bytes) {
  return "input " + std::to_string(bytes.size()) + "\n" + std::string(bytes);
}

std::vector<AgentOrder> AgentOrderReader::feed(std::string_view bytes) {
  constexpr size_t kMaxLine = 64;
  constexpr std::string_view kInputPrefix = "input ";
  constexpr std::string_view kStopPrefix = "stop ";
  std::vector<AgentOrder> orders;
  auto breakStream = [&] {
    broken_ = true;
    orders.push_back({AgentOrder::Kind::kBroken, 0, {}});
  };
  while (!bytes.empty() && !broken_) {
    if (inInput_) {
      size_t take = std::min(inputLeft_, bytes.size());
      // One order per piece: a frame is passed on as it comes, not held until complete.
      if (take > 0) orders.push_back({AgentOrder::Kind::kInput, 0, std::string(bytes.substr(0, take))});
      bytes.remove_prefix(take);
      inputLeft_ -= take;
      inInput_ = inputLeft_ > 0;
      continue;
    }
    size_t newline = bytes.find('\n');
    line_ += bytes.substr(0, newline);
    if (line_.size() > kMaxLine) {
      breakStream();
      break;
    }
    if (newline == std::string_view::npos) break;
    bytes.remove_prefix(newline + 1);
    std::string line = std::move(line_);
    line_.clear();
    if (auto sig = parseAgentSignal(line)) {
      orders.push_back({AgentOrder::Kind::kSignal, *sig, {}});
    } else if (line + "\n" == kAgentInputEnd) {
      orders.push_back({AgentOrder::Kind::kInputEnd, 0, {}});
    } else if (std::string_view(line).substr(0, kStopPrefix.size()) == kStopPrefix) {
      long long rank = 0;
      // A malformed one is skipped, as unknown lines are.
      if (parseNumber(std::string_view(line).substr(kStopPrefix.size()), rank) && rank >= 0 && rank <= INT32_MAX) {
        orders.push_back({AgentOrder::Kind::kStopRank, 0, {}, static_cast<int>(rank)});
      }
    } else if (std::string_view(line).substr(0, kInputPrefix.size()) == kInputPrefix) {
      long long length = 0;
      if (!parseNumber(std::string_view(line).substr(kInputPrefix.size()), length) || length < 0 ||
          static_cast<size_t>(length) > kMaxAgentInputFrame) {
        breakStream();
        break;
      }
      inputLeft_ = static_cast<size_t>(length);
      inInput_ = inputLeft_ > 0;
    }
  }
  return orders;
}

constexpr std::string_view kInputTakenPrefix = "hvdrun-agent: input-taken ";

std::string formatAgentInputTaken(std::uint64_t total) {
  return std::string(kInputTakenPrefix) + std::to_string(total);
}

std::optional<std::uint64_t> parseAgentInputTaken(std::string_view line) {
  long long total = 0;
  if (line.substr(0, kInputTakenPrefix.size()) != kInputTakenPrefix ||
      !parseNumber(line.substr(kInputTakenPrefix.size()), total) || total < 0) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(total);
}

std::string formatAgentFailure(const RankFailure& f) {
  // The host last: a plan's host name has no spaces, and the rest are numbers and a time.
  return std::string(kFailurePrefix) + "rank=" + std::to_string(f.rank) + " pid=" + std::to_string(f.pid) +
         " code=" + std::to_string(f.exitCode) + " signal=" + std::to_string(f.signal) + " when=" + f.when +
         " oom=" + std::to_string(f.oomKillsOnHost) + " frozen=" + std::to_string(f.frozenSeconds) + " host=" + f.host;
}

std::optional<RankFailure> parseAgentFailure(std::string_view line) {
  if (line.substr(0, kFailurePrefix.size()) != kFailurePrefix) return std::nullopt;
  line.remove_prefix(kFailurePrefix.size());
  RankFailure f;
  long long rank = 0, pid = 0, code = 0, sig = 0;
  auto r = word(line, "rank"), p = word(line, "pid"), c = word(line, "code"), s = word(line, "signal");
  auto w = word(line, "when"), h = word(line, "host");
  if (!r || !p || !c || !s || !w || !h || !parseNumber(*r, rank) || !parseNumber(*p, pid) || !parseNumber(*c, code) ||
      !parseNumber(*s, sig)) {
    return std::nullopt;
  }
  f.rank = static_cast<int>(rank);
  f.pid = static_cast<int>(pid);
  f.exitCode = static_cast<int>(code);
  f.signal = static_cast<int>(sig);
  f.when = std::string(*w);
  f.host = std::string(*h);
  // The OOM killer's kills on the host while its ranks ran; absent from an older agent's.
  long long oom = 0;
  if (auto o = word(line, "oom"); o && parseNumber(*o, oom)) f.oomKillsOnHost = static_cast<std::uint64_t>(oom);
  long long frozen = -1;  // as oom
  if (auto z = word(line, "frozen"); z && parseNumber(*z, frozen)) f.frozenSeconds = static_cast<int>(frozen);
  return f;
}

namespace {
constexpr std::string_view kPidPrefix = "hvdrun-agent: pid ";
}  // namespace

std::string formatAgentPid(long pid) { return std::string(kPidPrefix) + std::to_string(pid); }

std::optional<long> parseAgentPid(std::string_view line) {
  if (line.substr(0, kPidPrefix.size()) != kPidPrefix) return std::nullopt;
  long long pid = 0;
  if (!parseNumber(line.substr(kPidPrefix.size()), pid) || pid <= 1 || pid > (1LL << 30)) return std::nullopt;
  return static_cast<long>(pid);
}

std::string formatAgentRankEnd(int rank) { return std::string(kRankEndPrefix) + "rank=" + std::to_string(rank); }

std::optional<int> parseAgentRankEnd(std::string_view line) {
  if (line.substr(0, kRankEndPrefix.size()) != kRankEndPrefix) return std::nullopt;
  line.remove_prefix(kRankEndPrefix.size());
  long long rank = 0;
  if (line.substr(0, 5) != "rank=" || !parseNumber(line.substr(5), rank) || rank < 0 || rank >= (1 << 24)) {
    return std::nullopt;
  }
  return static_cast<int>(rank);
}

}  // namespace hvd::cli
