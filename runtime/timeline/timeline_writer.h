// runtime/timeline/timeline_writer.h: one rank's Chrome trace (the JSON array format that
// Perfetto and chrome://tracing open), written off the hot path. record() only appends to
// a bounded in-memory queue (a full queue drops the event and counts it: it never blocks
// or spins); a writer thread formats the events and appends them with one pwrite that
// also rewrites the closing bracket, so the file is valid JSON at every moment, also
// after SIGKILL. The file stops growing at its size cap, saying so in a last event.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvd/types.h"
#include "runtime/common/status.h"

namespace hvd::timeline {

// One trace event. `name` must have static storage (the writer formats it later); `text`
// is for the rare events that carry their own words (a tensor's track name).
struct Event {
  char phase = 'X';            // 'X' complete (with dur), 'i' instant, 'M' track name
  const char* name = "";
  int track = 0;               // the tid: one track per tensor
  double tsUs = 0, durUs = 0;  // microseconds on this rank's clock, aligned to rank 0's
  int dtype = -1;              // DataType as int for the dtype arg; -1: no args
  std::uint64_t count = 0;     // elements, with dtype
  std::string text;
};

struct WriterOptions {
  std::string path;
  int rank = 0;                  // the pid of every event
  std::uint64_t maxBytes = 64u << 20;
  size_t queueCapacity = 1 << 16;  // events waiting to be written
  double clockOffsetUs = 0;        // added to every timestamp: this rank's clock to rank 0's
  std::chrono::milliseconds writeEvery{100};  // the writer's tick: a crash loses at most this
  std::string offsetNote;          // how the offset was measured, for the trace's metadata
};

class TimelineWriter {
 public:
  // Creates (truncates) the file and writes the process's metadata. kSystem naming the
  // path when it cannot be created.
  static Result<std::unique_ptr<TimelineWriter>> open(WriterOptions options);
  ~TimelineWriter();  // writes what is queued, the dropped count, and closes

  // Never blocks on I/O; thread-safe. A full queue (or a file at its cap) drops the event.
  void record(Event event);
  // The same for a cycle's events at once (one lock instead of one per event: the lock was
  // a sixth of an event's cost); takes them out of `events`, which keeps its capacity.
  void record(std::vector<Event>& events);
  // Microseconds on the steady clock, as record() expects before the offset is applied.
  static double nowUs();
  // Blocks until what was recorded so far is in the file (tests, shutdown).
  void flush();
  // Asks the writer thread to write what is queued now rather than at its next 100 ms
  // tick; returns at once (for callers that know they are idle).
  void writeSoon() { wake_.notify_one(); }
  std::uint64_t dropped() const { return dropped_.load(); }

 private:
  explicit TimelineWriter(WriterOptions options) : options_(std::move(options)) {}
  void threadMain();
  void append(const std::vector<Event>& events);  // writer thread only
  void writeText(size_t used);                     // puts text_'s first bytes before the ']' 

  WriterOptions options_;
  int fd_ = -1;
  std::uint64_t end_ = 0;  // offset of the closing ']'
  bool capped_ = false;
  std::vector<char> text_;  // the writer thread's formatting buffer, kept between batches

  std::mutex mutex_;
  std::condition_variable wake_, flushed_;
  std::vector<Event> queue_;
  std::uint64_t recorded_ = 0, written_ = 0;  // events accepted, and handled by the writer
  bool stopping_ = false;
  std::atomic<std::uint64_t> dropped_{0};
  std::uint64_t droppedReported_ = 0;
  std::thread thread_;
};

}  // namespace hvd::timeline
