// cli/supervise/stdin_forwarding_test.cc: both halves over real pipes, as hvdrun's stdin, the
// agent's relay and the rank's stdin are.
#include "cli/supervise/stdin_forwarding.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <string>

#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {
namespace {

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  void closeWrite() {
    ::close(write);
    write = -1;
  }
  void closeRead() {
    ::close(read);
    read = -1;
  }
};

void writeAll(int fd, const std::string& bytes) {
  for (size_t at = 0; at < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    REQUIRE(n > 0);
    at += static_cast<size_t>(n);
  }
}

// What a non-blocking read of fd returns now (empty when nothing is there).
std::string readNow(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

// The last count among the records, or nullopt.
std::optional<std::uint64_t> lastCount(const std::string& records) {
  std::optional<std::uint64_t> last;
  size_t start = 0;
  while (start < records.size()) {
    size_t end = records.find('\n', start);
    if (auto count = parseAgentInputTaken(std::string_view(records).substr(start, end - start))) last = count;
    start = end + 1;
  }
  return last;
}

}  // namespace

TEST_CASE("stdin reaches the rank byte for byte through frames and the agent and holds the window meanwhile",
          "[stdin]") {
  // No SIGPIPE here either: the feeder's caller ignores it.
  ::signal(SIGPIPE, SIG_IGN);
  std::string input;
  for (int i = 0; i < 300000; ++i) input += static_cast<char>((i * 31) % 251);
  Pipe stdinPipe, relay, rankStdin;
  // More than the window, written up front: the sender must stop at the window anyway.
  ::fcntl(stdinPipe.write, F_SETPIPE_SZ, 1 << 20);
  writeAll(stdinPipe.write, input);
  stdinPipe.closeWrite();
  ::fcntl(rankStdin.write, F_SETPIPE_SZ, 1 << 20);
  ::fcntl(relay.write, F_SETPIPE_SZ, 1 << 20);  // one thread here: the window must fit

  StdinSender sender(stdinPipe.read);
  StdinFeeder feeder(relay.read, rankStdin.write);
  relay.read = rankStdin.write = -1;  // the feeder's now
  AgentOrderReader reader;
  std::string received;
  bool ended = false;
  size_t windowFullTimes = 0;
  const auto now = StdinSender::Clock::now();
  for (int round = 0; round < 100 && !ended; ++round) {
    // hvdrun: read while the window lets it.
    std::string toAgent;
    while (sender.wantsRead(now)) toAgent += sender.read();
    if (!sender.done()) ++windowFullTimes;
    // The agent: orders off the connection, input into the relay, the relay into the pipe.
    for (const AgentOrder& o : reader.feed(toAgent)) {
      REQUIRE(o.kind != AgentOrder::Kind::kBroken);
      if (o.kind == AgentOrder::Kind::kInput) writeAll(relay.write, o.input);
      if (o.kind == AgentOrder::Kind::kInputEnd) relay.closeWrite();
    }
    std::string records;
    while (feeder.source() >= 0 && readable(feeder.source())) records += feeder.readSource();
    if (feeder.wantsWrite()) records += feeder.writePipe();
    // The rank reads what its pipe holds.
    received += readNow(rankStdin.read);
    if (feeder.pipe() < 0) ended = true;
    if (auto count = lastCount(records)) sender.taken(*count);
  }
  CHECK(ended);
  CHECK(sender.done());
  CHECK(windowFullTimes >= 2);  // 300 KB through a 128 KiB window
  CHECK(received == input);
}

TEST_CASE("a rank that does not read its stdin fills only its pipe and the feeder never blocks", "[stdin]") {
  ::signal(SIGPIPE, SIG_IGN);
  Pipe relay, rankStdin;
  StdinFeeder feeder(relay.read, rankStdin.write);
  relay.read = rankStdin.write = -1;
  std::string records;
  for (int i = 0; i < 4; ++i) {  // twice the window: more than an unread default pipe takes
    writeAll(relay.write, std::string(kMaxAgentInputFrame, 'x'));
    records += feeder.readSource();
  }
  CHECK(feeder.wantsWrite());
  auto count = lastCount(records);
  REQUIRE(count.has_value());
  CHECK(*count < 4 * kMaxAgentInputFrame);
  CHECK(*count == readNow(rankStdin.read).size());
  records = feeder.writePipe();  // the rank read: the pipe takes more now
  REQUIRE(lastCount(records).has_value());
  CHECK(*lastCount(records) > *count);
}

TEST_CASE("a rank that closes its stdin is reported once and later input goes nowhere", "[stdin]") {
  ::signal(SIGPIPE, SIG_IGN);
  Pipe relay, rankStdin;
  StdinFeeder feeder(relay.read, rankStdin.write);
  relay.read = rankStdin.write = -1;
  rankStdin.closeRead();
  writeAll(relay.write, "abc");
  std::string records = feeder.readSource();
  CHECK(records == std::string(kAgentInputClosed) + "\n");
  CHECK(feeder.pipe() < 0);
  writeAll(relay.write, "def");
  CHECK(feeder.readSource().empty());
  CHECK(feeder.rankEnded().empty());
  CHECK_FALSE(feeder.wantsWrite());
}

TEST_CASE("a rank that ends before reading its stdin is reported as taking no more", "[stdin]") {
  Pipe relay, rankStdin;
  StdinFeeder feeder(relay.read, rankStdin.write);
  relay.read = rankStdin.write = -1;
  CHECK(feeder.rankEnded() == std::string(kAgentInputClosed) + "\n");
  CHECK(feeder.rankEnded().empty());
}

TEST_CASE("an agent's count beyond what was sent does not widen hvdrun's window", "[stdin]") {
  Pipe stdinPipe;
  ::fcntl(stdinPipe.write, F_SETPIPE_SZ, 1 << 20);
  writeAll(stdinPipe.write, std::string(kAgentInputWindow + 10, 'y'));
  StdinSender sender(stdinPipe.read);
  const auto now = StdinSender::Clock::now();
  size_t framed = 0;
  while (sender.wantsRead(now)) framed += sender.read().size();
  CHECK(framed > kAgentInputWindow);  // the payload plus the frames' headers
  sender.taken(kAgentInputWindow * 10);
  REQUIRE(sender.wantsRead(now));
  std::string frame = sender.read();
  CHECK(frame == agentInputFrame("yyyyyyyyyy"));
  CHECK_FALSE(sender.done());
  stdinPipe.closeWrite();
  REQUIRE(sender.wantsRead(now));
  CHECK(sender.read() == std::string(kAgentInputEnd));
  CHECK(sender.done());
  CHECK_FALSE(sender.wantsRead(now));
}

}  // namespace hvd::cli
