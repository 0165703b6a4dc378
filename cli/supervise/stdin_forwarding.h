// cli/supervise/stdin_forwarding.h: hvdrun's stdin passed on to the one rank that reads it
// (--stdin) when that rank is not hvdrun's child but a host agent's (an ssh launch), in two
// halves that speak agent_protocol.h's input frames:
//   StdinSender, in hvdrun: reads its stdin while the agent's window has room, into frames;
//   StdinFeeder, in the agent: puts the frames' bytes into its rank's stdin pipe and counts
//   what that pipe took, for hvdrun's window.
// Neither ever blocks: a rank that does not read its stdin holds hvdrun's reading, never
// its signals or the ranks' output, and holds at most kAgentInputWindow bytes in between.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace hvd::cli {

class StdinSender {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StdinSender(int fd);

  // Whether to poll the fd for reading now. Not while the window is full or after the end;
  // not while the fd is the terminal and hvdrun a background job (reading would stop it
  // with SIGTTIN): then retryAt() says when to look again.
  bool wantsRead(Clock::time_point now);
  std::optional<Clock::time_point> retryAt() const { return retryAt_; }

  // Reads what is there (after poll said so) and returns what goes to the agent: a frame,
  // or kAgentInputEnd at the end of the input. Empty when nothing came.
  std::string read();

  void taken(std::uint64_t total);  // the agent's count of what its rank's pipe took
  void stop() { done_ = true; }     // the rank takes no more, or its agent is gone
  bool done() const { return done_; }

 private:
  int fd_;
  bool terminal_;  // asked once: the supervisor asks wantsRead at every turn of its loop
  bool done_ = false;
  std::uint64_t sent_ = 0, taken_ = 0;
  std::optional<Clock::time_point> retryAt_;
};

class StdinFeeder {
 public:
  // source: where the frames' bytes arrive (the agent's relay from its connection); pipe:
  // the write end of the rank's stdin, made non-blocking here. Takes both.
  StdinFeeder(int source, int pipe);
  ~StdinFeeder();
  StdinFeeder(const StdinFeeder&) = delete;
  StdinFeeder& operator=(const StdinFeeder&) = delete;

  int source() const { return source_; }  // poll for reading while >= 0
  int pipe() const { return pipe_; }
  bool wantsWrite() const { return pipe_ >= 0 && !pending_.empty(); }  // poll pipe() for writing

  // Each returns the records (agent_protocol.h, each ending in '\n') to put on the agent's
  // stderr, in order with the ranks' lines: the count taken, and once the rank's pipe takes
  // no more, kAgentInputClosed.
  std::string readSource();  // after poll: bytes, or the end of the input
  std::string writePipe();   // after poll: what the pipe takes now
  std::string rankEnded();   // the rank's process has ended: its stdin takes no more

 private:
  std::string closePipe();

  int source_;
  int pipe_;
  std::string pending_;
  bool sourceEnded_ = false;
  std::uint64_t taken_ = 0;
};

}  // namespace hvd::cli
