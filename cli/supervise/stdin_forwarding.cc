// cli/supervise/stdin_forwarding.cc: the sender (hvdrun) and the feeder (a host agent) of a forwarded stdin.
#include "cli/supervise/stdin_forwarding.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {
namespace {

// How long a background job waits before it looks at its terminal again (a `fg` also
// wakes the supervisor with SIGCONT; this covers a terminal handed over without one).
constexpr std::chrono::seconds kTerminalRetry{1};

}  // namespace

StdinSender::StdinSender(int fd) : fd_(fd), terminal_(::isatty(fd) == 1) {}

bool StdinSender::wantsRead(Clock::time_point now) {
  if (done_ || sent_ - taken_ >= kAgentInputWindow) return false;
  if (retryAt_ && now < *retryAt_) return false;
  retryAt_.reset();
  // tcgetpgrp fails for a terminal that is not hvdrun's controlling one, which it may read.
  if (terminal_) {
    pid_t foreground = ::tcgetpgrp(fd_);
    if (foreground > 0 && foreground != ::getpgrp()) {
      retryAt_ = now + kTerminalRetry;
      return false;
    }
  }
  return true;
}

std::string StdinSender::read() {
  const size_t room = kAgentInputWindow - static_cast<size_t>(sent_ - taken_);
  std::string bytes(std::min(room, kMaxAgentInputFrame), '\0');
  ssize_t n = ::read(fd_, bytes.data(), bytes.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return {};
  if (n < 0 && errno == EIO) {
    // A background job reading its terminal (moved there between the check and the read).
    retryAt_ = Clock::now() + kTerminalRetry;
    return {};
  }
  if (n <= 0) {  // the end, or a stdin that cannot be read: the rank reads an end either way
    done_ = true;
    return std::string(kAgentInputEnd);
  }
  sent_ += static_cast<std::uint64_t>(n);
  bytes.resize(static_cast<size_t>(n));
  return agentInputFrame(bytes);
}

void StdinSender::taken(std::uint64_t total) {
  // Counts only grow; one from a confused agent beyond what was sent must not open the
  // window wider than it is.
  taken_ = std::clamp(total, taken_, sent_);
}

StdinFeeder::StdinFeeder(int source, int pipe) : source_(source), pipe_(pipe) {
  if (pipe_ >= 0) ::fcntl(pipe_, F_SETFL, ::fcntl(pipe_, F_GETFL) | O_NONBLOCK);
}

StdinFeeder::~StdinFeeder() {
  if (source_ >= 0) ::close(source_);
  if (pipe_ >= 0) ::close(pipe_);
}

std::string StdinFeeder::readSource() {
  char buf[65536];
  ssize_t n = ::read(source_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return {};
  if (n <= 0) {
    ::close(source_);
    source_ = -1;
    sourceEnded_ = true;
    return writePipe();  // closes the pipe once what is pending is in: the rank reads its end
  }
  // A rank that takes no more: the rest goes nowhere (hvdrun stops sending once told).
  if (pipe_ < 0) return {};
  pending_.append(buf, static_cast<size_t>(n));
  return writePipe();
}

std::string StdinFeeder::writePipe() {
  std::string records;
  const std::uint64_t before = taken_;
  while (pipe_ >= 0 && !pending_.empty()) {
    ssize_t n = ::write(pipe_, pending_.data(), pending_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) {  // EPIPE: the rank closed its stdin (SIGPIPE is ignored where this runs)
      records = closePipe();
      break;
    }
    pending_.erase(0, static_cast<size_t>(n));
    taken_ += static_cast<std::uint64_t>(n);
  }
  if (taken_ != before) records.insert(0, formatAgentInputTaken(taken_) + "\n");
  if (pipe_ >= 0 && pending_.empty() && sourceEnded_) {
    ::close(pipe_);
    pipe_ = -1;
  }
  return records;
}

std::string StdinFeeder::rankEnded() { return pipe_ >= 0 ? closePipe() : std::string(); }

std::string StdinFeeder::closePipe() {
  ::close(pipe_);
  pipe_ = -1;
  pending_.clear();
  return std::string(kAgentInputClosed) + "\n";
}

}  // namespace hvd::cli
