// runtime/timeline/timeline_writer.cc: the queue, the writer thread and the always-valid file.
#include "runtime/timeline/timeline_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace hvd::timeline {
namespace {

// Writes into memory the caller has made room for (see roomFor): formatting runs on the
// writer thread for every event, and growing a std::string one piece at a time, printf and
// to_chars of a double with a precision were most of an event's cost.
struct Cursor {
  char* p;

  void put(const char* s, size_t n) {
    std::memcpy(p, s, n);
    p += n;
  }
  template <size_t N>
  void lit(const char (&s)[N]) {
    put(s, N - 1);
  }
  void put(char c) { *p++ = c; }
  void number(std::uint64_t v) { p = std::to_chars(p, p + 20, v).ptr; }
  // Microseconds with three decimals, from integers.
  void micros(double us) {
    if (!(us >= 0) || us > 9e15) {  // negative or absurd: rare, so the slow path is fine
      p = std::to_chars(p, p + 40, us, std::chars_format::fixed, 3).ptr;
      return;
    }
    auto thousandths = static_cast<std::uint64_t>(us * 1000.0 + 0.5);
    number(thousandths / 1000);
    auto frac = static_cast<unsigned>(thousandths % 1000);
    char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                      static_cast<char>('0' + frac % 10)};
    put(digits, 4);
  }
  void jsonString(const std::string& s) {
    put('"');
    for (char c : s) {
      auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        put('\\');
        put(c);
      } else if (u < 0x20) {
        static const char hex[] = "0123456789abcdef";
        char esc[6] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
        put(esc, 6);
      } else {
        put(c);
      }
    }
    put('"');
  }
};

std::string quoted(const std::string& s) {
  std::string out(2 + 6 * s.size(), '\0');
  Cursor c{out.data()};
  c.jsonString(s);
  out.resize(static_cast<size_t>(c.p - out.data()));
  return out;
}

// An upper bound on format()'s output for `e`.
size_t roomFor(const Event& e) { return 256 + std::strlen(e.name) + 6 * e.text.size(); }

// No spaces: at thousands of events per step, every byte is written and read again by merge.
void format(Cursor& out, const Event& e, int pid) {
  if (e.phase == 'M') {
    out.lit("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
    out.number(static_cast<std::uint64_t>(pid));
    out.lit(",\"tid\":");
    out.number(static_cast<std::uint64_t>(e.track));
    out.lit(",\"args\":{\"name\":");
    out.jsonString(e.text);
    out.lit("}}");
    return;
  }
  out.lit("{\"name\":");
  if (e.text.empty()) {
    out.put('"');
    out.put(e.name, std::strlen(e.name));  // static names need no escaping
    out.put('"');
  } else {
    out.jsonString(e.text);
  }
  out.lit(",\"ph\":\"");
  out.put(e.phase);
  out.lit("\",\"pid\":");
  out.number(static_cast<std::uint64_t>(pid));
  out.lit(",\"tid\":");
  out.number(static_cast<std::uint64_t>(e.track));
  out.lit(",\"ts\":");
  out.micros(e.tsUs);
  if (e.phase == 'X') {
    out.lit(",\"dur\":");
    out.micros(e.durUs);
  }
  if (e.phase == 'i') out.lit(",\"s\":\"t\"");
  if (e.dtype >= 0) {
    auto type = static_cast<DataType>(e.dtype);
    out.lit(",\"args\":{\"dtype\":\"");
    std::string_view typeName = dataTypeName(type);
    out.put(typeName.data(), typeName.size());
    out.lit("\",\"count\":");
    out.number(e.count);
    out.lit(",\"bytes\":");
    out.number(e.count * dataTypeSize(type));
    out.put('}');
  }
  out.put('}');
}

}  // namespace

double TimelineWriter::nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<TimelineWriter>> TimelineWriter::open(WriterOptions options) {
  std::unique_ptr<TimelineWriter> w(new TimelineWriter(std::move(options)));
  w->queue_.reserve(w->options_.queueCapacity);
  w->fd_ = ::open(w->options_.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return systemError("cannot write the timeline '" + w->options_.path + "'");
  int pid = w->options_.rank;
  std::string head = "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"name\": \"rank " + std::to_string(pid) + "\"}},\n" +
                     "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"sort_index\": " + std::to_string(pid) + "}},\n" +
                     "{\"name\": \"clock_offset\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"offset_to_rank_0_us\": " + std::to_string(w->options_.clockOffsetUs) + ", \"how\": ";
  head += quoted(w->options_.offsetNote);
  head += "}}]";
  if (::pwrite(w->fd_, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size())) {
    return systemError("cannot write the timeline '" + w->options_.path + "'");
  }
  w->end_ = head.size() - 1;
  w->thread_ = std::thread([p = w.get()] { p->threadMain(); });
  return w;
}

TimelineWriter::~TimelineWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void TimelineWriter::record(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capped_ || queue_.size() >= options_.queueCapacity) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  event.tsUs += options_.clockOffsetUs;
  queue_.push_back(std::move(event));
  ++recorded_;
  if (queue_.size() == options_.queueCapacity / 2) wake_.notify_one();
}

void TimelineWriter::record(std::vector<Event>& events) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t room = capped_ ? 0 : options_.queueCapacity - std::min(queue_.size(), options_.queueCapacity);
    size_t take = std::min(room, events.size());
    bool halfFull = queue_.size() < options_.queueCapacity / 2 && queue_.size() + take >= options_.queueCapacity / 2;
    for (size_t i = 0; i < take; ++i) {
      events[i].tsUs += options_.clockOffsetUs;
      queue_.push_back(std::move(events[i]));
    }
    recorded_ += take;
    if (take < events.size()) dropped_.fetch_add(events.size() - take, std::memory_order_relaxed);
    if (halfFull) wake_.notify_one();
  }
  events.clear();
}

void TimelineWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::uint64_t target = recorded_;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return written_ >= target || stopping_; });
}

void TimelineWriter::threadMain() {
  // The writer yields to the rank's own threads: at nice 19 (this thread only) a rank
  // that wakes takes the core from it at once instead of waiting out its slice, which on
  // a host with fewer cores than ranks held up every peer in the ring (docs/benchmarks.md).
  // It still runs whenever a core is idle, which ranks waiting on their peers leave often
  // enough: no event was dropped at np=2 and 4 on 2 cores, also beside two busy loops.
  // Named so that top -H shows it.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  (void)::pthread_setname_np(::pthread_self(), "hvd-timeline");
  // Both halves of the double buffer are sized once: a queue that grows by reallocating
  // faulted fresh pages in every 100 ms batch (malloc hands large blocks back to the OS).
  std::vector<Event> batch;
  batch.reserve(options_.queueCapacity);
  while (true) {
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Written every writeEvery (100 ms), or sooner when half full, flushed or asked to
      // (writeSoon): a crash loses at most that.
      wake_.wait_for(lock, options_.writeEvery, [&] { return stopping_ || written_ < recorded_; });
      batch.swap(queue_);
      stop = stopping_;
    }
    append(batch);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      written_ += batch.size();
    }
    flushed_.notify_all();
    batch.clear();
    if (stop) break;
  }
}

void TimelineWriter::append(const std::vector<Event>& events) {
  size_t used = 0;
  for (const Event& e : events) {
    size_t room = 2 + roomFor(e);
    if (used + room > text_.size()) text_.resize(std::max(text_.size() * 2, used + room));
    Cursor out{text_.data() + used};
    out.lit(",\n");
    format(out, e, options_.rank);
    used = static_cast<size_t>(out.p - text_.data());
  }
  text_.resize(std::max(text_.size(), used + 400));
  std::uint64_t dropped = dropped_.load();
  if (dropped != droppedReported_) {
    // The count so far, as it grows: visible even if the rank dies later.
    used += static_cast<size_t>(
        std::snprintf(text_.data() + used, 400,
                      ",\n{\"name\":\"TIMELINE_DROPPED_EVENTS\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":0,"
                      "\"ts\":%.3f,\"args\":{\"dropped_so_far\":%llu}}",
                      options_.rank, nowUs() + options_.clockOffsetUs, static_cast<unsigned long long>(dropped)));
    droppedReported_ = dropped;
  }
  if (used > 0) writeText(used);
}

void TimelineWriter::writeText(size_t used) {
  if (capped_) return;
  if (end_ + used + 1 > options_.maxBytes) {
    used = static_cast<size_t>(
        std::snprintf(text_.data(), 400,
                      ",\n{\"name\":\"TIMELINE_TRUNCATED\",\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":0,"
                      "\"ts\":%.3f,\"args\":{\"reason\":\"the timeline reached its cap of %llu bytes "
                      "(--timeline-max-mb); later events were not recorded\"}}",
                      options_.rank, nowUs() + options_.clockOffsetUs, static_cast<unsigned long long>(options_.maxBytes)));
    std::lock_guard<std::mutex> lock(mutex_);
    capped_ = true;
  }
  text_[used++] = ']';
  // One pwrite replaces the closing bracket with the new events and a new bracket.
  ssize_t n = ::pwrite(fd_, text_.data(), used, static_cast<off_t>(end_));
  if (n == static_cast<ssize_t>(used)) {
    end_ += used - 1;
    return;
  }
  // A full disk: put the bracket back where it was and stop, so the file stays valid.
  if (::pwrite(fd_, "]", 1, static_cast<off_t>(end_)) == 1) (void)::ftruncate(fd_, static_cast<off_t>(end_ + 1));
  std::lock_guard<std::mutex> lock(mutex_);
  capped_ = true;
}

}  // namespace hvd::timeline
