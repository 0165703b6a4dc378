// cli/os/console_writer.h: hvdrun's console (its stdout and stderr) written by a thread of
// its own, so a console that stops reading (a terminal paused with Ctrl-S, a full pipe)
// stalls only that thread, never the supervisor's signals and deadlines.
// Contract: write() never blocks and never drops; text is queued whole and written in
// order, across both fds, in writes that end at a line's end (each one at most PIPE_BUF
// bytes unless a single line is longer), so lines from here and hvdrun's other messages
// never interleave mid-line. The queue is bounded only by its users: full() says when to
// stop reading more (the ranks then wait on their own pipes, as they would on a console).
// A write error (EPIPE: nobody reads any more; ENOSPC: a full disk) drops that fd's output
// from then on, and is reported once through failureFd()/takeFailures().
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace hvd::cli {

class ConsoleWriter {
 public:
  static constexpr size_t kDefaultCapacity = size_t{4} << 20;

  explicit ConsoleWriter(size_t capacity = kDefaultCapacity);
  // Does not wait: whatever is still queued is written by the thread as long as the process
  // lives (a stalled console may never take it; a process that exits drops it).
  ~ConsoleWriter();
  ConsoleWriter(const ConsoleWriter&) = delete;
  ConsoleWriter& operator=(const ConsoleWriter&) = delete;

  // Queues text (whole lines) for fd (hvdrun's 1 or 2; any fd in tests).
  void write(int fd, std::string_view text);

  // At least `capacity` bytes are queued.
  bool full() const;

  // Readable after the thread has written something (poll it while full() or flushing);
  // clearWake() empties it.
  int wakeFd() const;
  void clearWake();

  // Everything queued so far has been written (or dropped with its fd).
  bool drained() const;

  // Not drained: the fd the thread is writing to (or will write to next); -1 when drained.
  int stalledFd() const;

  // An fd whose write failed, and why (errno).
  struct Failure {
    int fd;
    int error;
  };

  // Readable once a write has failed; takeFailures() empties it and returns the failures
  // not taken before. The caller must learn of them even if nothing more is written: a
  // job whose output has nowhere to go may have gone quiet.
  int failureFd() const;
  std::vector<Failure> takeFailures();

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace hvd::cli
