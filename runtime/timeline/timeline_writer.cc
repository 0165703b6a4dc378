// runtime/timeline/timeline_writer.cc: the queue, the writer thread and the always-valid file.
#include "runtime/timeline/timeline_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace hvd::timeline {
namespace {

void appendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

void appendNumber(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
  out.append(buf, ec == std::errc() ? end : buf);
}

void appendNumber(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc() ? end : buf);
}

// Formatting runs on the writer thread for every event, so it avoids printf and
// allocation: to_chars and appends into one growing buffer.
void format(std::string& out, const Event& e, int pid) {
  if (e.phase == 'M') {
    out += "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": ";
    appendNumber(out, static_cast<std::uint64_t>(pid));
    out += ", \"tid\": ";
    appendNumber(out, static_cast<std::uint64_t>(e.track));
    out += ", \"args\": {\"name\": ";
    appendJsonString(out, e.text);
    out += "}}";
    return;
  }
  out += "{\"name\": ";
  if (e.text.empty()) {
    out += '"';
    out += e.name;  // static names need no escaping
    out += '"';
  } else {
    appendJsonString(out, e.text);
  }
  out += ", \"ph\": \"";
  out += e.phase;
  out += "\", \"pid\": ";
  appendNumber(out, static_cast<std::uint64_t>(pid));
  out += ", \"tid\": ";
  appendNumber(out, static_cast<std::uint64_t>(e.track));
  out += ", \"ts\": ";
  appendNumber(out, e.tsUs);
  if (e.phase == 'X') {
    out += ", \"dur\": ";
    appendNumber(out, e.durUs);
  }
  if (e.phase == 'i') out += ", \"s\": \"t\"";
  if (e.dtype >= 0) {
    auto type = static_cast<DataType>(e.dtype);
    out += ", \"args\": {\"dtype\": \"";
    out += dataTypeName(type);
    out += "\", \"count\": ";
    appendNumber(out, e.count);
    out += ", \"bytes\": ";
    appendNumber(out, e.count * dataTypeSize(type));
    out += '}';
  }
  out += '}';
}

}  // namespace

double TimelineWriter::nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<TimelineWriter>> TimelineWriter::open(WriterOptions options) {
  std::unique_ptr<TimelineWriter> w(new TimelineWriter(std::move(options)));
  w->fd_ = ::open(w->options_.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return systemError("cannot write the timeline '" + w->options_.path + "'");
  int pid = w->options_.rank;
  std::string head = "[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"name\": \"rank " + std::to_string(pid) + "\"}},\n" +
                     "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"sort_index\": " + std::to_string(pid) + "}},\n" +
                     "{\"name\": \"clock_offset\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"offset_to_rank_0_us\": " + std::to_string(w->options_.clockOffsetUs) + ", \"how\": ";
  appendJsonString(head, w->options_.offsetNote);
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

void TimelineWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::uint64_t target = recorded_;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return written_ >= target || stopping_; });
}

void TimelineWriter::threadMain() {
  std::vector<Event> batch;
  while (true) {
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Written every 100 ms, or sooner when half full or flushed: a crash loses at most that.
      wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_ || written_ < recorded_; });
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
  std::string text;
  text.reserve(events.size() * 110);
  for (const Event& e : events) {
    text += ",\n";
    format(text, e, options_.rank);
  }
  std::uint64_t dropped = dropped_.load();
  if (dropped != droppedReported_) {
    // The count so far, as it grows: visible even if the rank dies later.
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ",\n{\"name\": \"TIMELINE_DROPPED_EVENTS\", \"ph\": \"i\", \"s\": \"p\", \"pid\": %d, \"tid\": 0, "
                  "\"ts\": %.3f, \"args\": {\"dropped_so_far\": %llu}}",
                  options_.rank, nowUs() + options_.clockOffsetUs, static_cast<unsigned long long>(dropped));
    text += buf;
    droppedReported_ = dropped;
  }
  if (!text.empty()) writeRaw(text);
}

void TimelineWriter::writeRaw(const std::string& eventsText) {
  if (capped_) return;
  std::string text = eventsText;
  if (end_ + text.size() + 1 > options_.maxBytes) {
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  ",\n{\"name\": \"TIMELINE_TRUNCATED\", \"ph\": \"i\", \"s\": \"g\", \"pid\": %d, \"tid\": 0, "
                  "\"ts\": %.3f, \"args\": {\"reason\": \"the timeline reached its cap of %llu bytes "
                  "(--timeline-max-mb); later events were not recorded\"}}",
                  options_.rank, nowUs() + options_.clockOffsetUs, static_cast<unsigned long long>(options_.maxBytes));
    text = buf;
    std::lock_guard<std::mutex> lock(mutex_);
    capped_ = true;
  }
  text += "]";
  // One pwrite replaces the closing bracket with the new events and a new bracket.
  ssize_t n = ::pwrite(fd_, text.data(), text.size(), static_cast<off_t>(end_));
  if (n == static_cast<ssize_t>(text.size())) {
    end_ += text.size() - 1;
    return;
  }
  // A full disk: put the bracket back where it was and stop, so the file stays valid.
  if (::pwrite(fd_, "]", 1, static_cast<off_t>(end_)) == 1) (void)::ftruncate(fd_, static_cast<off_t>(end_ + 1));
  std::lock_guard<std::mutex> lock(mutex_);
  capped_ = true;
}

}  // namespace hvd::timeline
