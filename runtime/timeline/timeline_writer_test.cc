// runtime/timeline/timeline_writer_test.cc: the trace file is valid JSON whenever it is
// read, a full queue drops and counts, the cap stops the file and says so, and merging
// per-rank traces gives one array with every event.
#include "runtime/timeline/timeline_writer.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/timeline/trace_files.h"
#include "runtime/common/json.h"

using hvd::timeline::Event;
using hvd::timeline::TimelineWriter;

namespace {

// The file's JSON document; `error` empty when it parsed, else why not.
hvd::Json readTrace(const std::string& path, std::string& error) {
  auto json = hvd::readJsonFile(path);
  error = json ? "" : json.status().message();
  return json ? *json : hvd::Json{};
}

// A fresh directory, removed with what it holds (never /tmp itself: mkdtemp must succeed).
struct TempDir {
  TempDir() {
    char name[] = "/tmp/hvd-timeline-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path_ = name;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string path_;
};

hvd::timeline::WriterOptions opts(const std::string& path, int rank) {
  hvd::timeline::WriterOptions o;
  o.path = path;
  o.rank = rank;
  return o;
}

Event span(int track, double ts) {
  Event e;
  e.name = "ALLREDUCE";
  e.track = track;
  e.tsUs = ts;
  e.durUs = 1.5;
  e.dtype = 0;
  e.count = 10;
  return e;
}

int countNamed(const hvd::Json& trace, const std::string& name) {
  int n = 0;
  for (const auto& e : trace.array()) n += e.has("name") && e["name"].str() == name;
  return n;
}

}  // namespace

TEST_CASE("the trace is valid JSON after every flush, with every event and its args", "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  auto w = TimelineWriter::open(opts(path, 3));
  REQUIRE(w.isOk());
  for (int round = 1; round <= 5; ++round) {
    for (int i = 0; i < 100; ++i) (*w)->record(span(i % 7, round * 1000.0 + i));
    Event tensor;
    tensor.phase = 'M';
    tensor.track = round;
    tensor.text = "layer \"" + std::to_string(round) + "\"\\weights";  // quotes and backslashes
    (*w)->record(tensor);
    (*w)->flush();
    std::string error;
    hvd::Json trace = readTrace(path, error);
    INFO("round " << round << ": " << error);
    REQUIRE(error.empty());
    REQUIRE(trace.isArray());
    CHECK(countNamed(trace, "ALLREDUCE") == 100 * round);
    CHECK(countNamed(trace, "thread_name") == round);
  }
  std::string error;
  hvd::Json trace = readTrace(path, error);
  const auto& e = trace.array().back();
  CHECK(e["pid"].number() == 3);
  CHECK(e["args"]["name"].str() == "layer \"5\"\\weights");
  bool sawArgs = false;
  for (const auto& ev : trace.array()) {
    if (ev.has("name") && ev["name"].str() == "ALLREDUCE") {
      sawArgs = ev["args"]["dtype"].str() == "float32" && ev["args"]["bytes"].number() == 40 && ev["dur"].number() == 1.5;
      break;
    }
  }
  CHECK(sawArgs);
}

TEST_CASE("a full queue drops events instead of waiting, and the trace says how many", "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  std::uint64_t dropped = 0;
  {
    hvd::timeline::WriterOptions o = opts(path, 0);
    o.queueCapacity = 8;
    auto w = TimelineWriter::open(o);
    REQUIRE(w.isOk());
    for (int i = 0; i < 100000; ++i) (*w)->record(span(1, i));
    dropped = (*w)->dropped();
  }
  REQUIRE(dropped > 0);
  std::string error;
  hvd::Json trace = readTrace(path, error);
  REQUIRE(error.empty());
  double reported = 0;
  for (const auto& e : trace.array()) {
    if (e.has("name") && e["name"].str() == "TIMELINE_DROPPED_EVENTS") reported = e["args"]["dropped_so_far"].number();
  }
  CHECK(reported == static_cast<double>(dropped));
  CHECK(countNamed(trace, "ALLREDUCE") + static_cast<int>(dropped) == 100000);
}

TEST_CASE("the trace stops at its cap, stays valid and ends saying why", "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  hvd::timeline::WriterOptions o = opts(path, 0);
  o.maxBytes = 20000;
  auto w = TimelineWriter::open(o);
  REQUIRE(w.isOk());
  for (int i = 0; i < 2000; ++i) {
    (*w)->record(span(1, i));
    if (i % 100 == 0) (*w)->flush();
  }
  (*w)->flush();
  std::string error;
  hvd::Json trace = readTrace(path, error);
  REQUIRE(error.empty());
  std::ifstream in(path, std::ios::ate);
  CHECK(static_cast<std::uint64_t>(in.tellg()) <= o.maxBytes);
  const auto& last = trace.array().back();
  CHECK(last["name"].str() == "TIMELINE_TRUNCATED");
  CHECK(last["args"]["reason"].str().find("--timeline-max-mb") != std::string::npos);
  CHECK(countNamed(trace, "ALLREDUCE") < 2000);
}

TEST_CASE("rank r's trace sits beside rank 0's, and merging gives one array with every rank's events", "[unit][timeline]") {
  CHECK(hvd::timeline::rankTracePath("/x/trace.json", 0) == "/x/trace.json");
  CHECK(hvd::timeline::rankTracePath("/x/trace.json", 3) == "/x/trace.rank3.json");
  CHECK(hvd::timeline::rankTracePath("/x.d/trace", 2) == "/x.d/trace.rank2");
  CHECK(hvd::timeline::rankTracePath(".trace", 1) == ".trace.rank1");
  CHECK(hvd::timeline::rankTracePath("/dev/null", 3) == "/dev/null");  // a device: every rank's
  CHECK(hvd::timeline::attemptTracePath("/x/trace.json", 0) == "/x/trace.attempt0.json");
  CHECK(hvd::timeline::attemptTracePath("/x.d/trace", 2) == "/x.d/trace.attempt2");
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  for (int r = 0; r < 3; ++r) {
    auto w = TimelineWriter::open(opts(hvd::timeline::rankTracePath(path, r), r));
    REQUIRE(w.isOk());
    for (int i = 0; i <= r; ++i) (*w)->record(span(1, i));
  }
  auto traces = hvd::timeline::existingRankTraces(path, 8);
  REQUIRE(traces.size() == 3);
  REQUIRE(hvd::timeline::mergeTraces(traces, path).isOk());
  std::string error;
  hvd::Json trace = readTrace(path, error);
  REQUIRE(error.empty());
  CHECK(countNamed(trace, "ALLREDUCE") == 1 + 2 + 3);
  CHECK(countNamed(trace, "process_name") == 3);
  std::ofstream(dir.path() + "/bad.json") << "{\"not\": \"an array\"}";
  auto bad = hvd::timeline::mergeTraces({dir.path() + "/bad.json"}, dir.path() + "/out.json");
  CHECK(bad.code() == hvd::Errc::kInvalidArgument);
}

TEST_CASE("a merge into a path that is not a regular file refuses and leaves that file as it was", "[unit][timeline]") {
  // A device such as /dev/null named as the trace: the merge's rename would have put a
  // regular file in its place (as root, /dev/null itself).
  TempDir dir;
  std::string input = dir.path() + "/in.json";
  std::ofstream(input) << "[]";
  std::string fifo = dir.path() + "/sink";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto s = hvd::timeline::mergeTraces({input}, fifo);
  CHECK(s.code() == hvd::Errc::kInvalidArgument);
  CHECK(s.message().find("not a regular file") != std::string::npos);
  CHECK(std::filesystem::is_fifo(fifo));
  CHECK_FALSE(std::filesystem::exists(fifo + ".merging"));
  auto intoDir = hvd::timeline::mergeTraces({input}, dir.path());
  CHECK(intoDir.code() == hvd::Errc::kInvalidArgument);
  CHECK(std::filesystem::is_directory(dir.path()));
}

TEST_CASE("a cycle's events handed over at once keep their order and what does not fit is dropped and counted",
          "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  hvd::timeline::WriterOptions o = opts(path, 0);
  o.queueCapacity = 64;
  o.clockOffsetUs = 1000;
  std::uint64_t dropped = 0;
  {
    auto w = TimelineWriter::open(o);
    REQUIRE(w.isOk());
    std::vector<Event> cycle;
    for (int i = 0; i < 50; ++i) cycle.push_back(span(i, i));
    (*w)->record(cycle);
    CHECK(cycle.empty());
    (*w)->flush();
    for (int i = 0; i < 100; ++i) cycle.push_back(span(1000 + i, 0));
    (*w)->record(cycle);  // the queue has room for 64 of them, unless the writer already ran
    dropped = (*w)->dropped();
  }
  std::string error;
  hvd::Json trace = readTrace(path, error);
  REQUIRE(error.empty());
  std::vector<double> tracks, stamps;
  for (const auto& e : trace.array()) {
    if (e.has("name") && e["name"].str() == "ALLREDUCE") tracks.push_back(e["tid"].number()), stamps.push_back(e["ts"].number());
  }
  REQUIRE(tracks.size() >= 50);
  for (size_t i = 0; i < 50; ++i) {
    CHECK(tracks[i] == static_cast<double>(i));
    CHECK(stamps[i] == 1000.0 + static_cast<double>(i));  // the offset applies to batches too
  }
  CHECK(dropped > 0);
  CHECK(tracks.size() + dropped == 150);
}

TEST_CASE("timestamps are written in microseconds with three decimals, rounded to the nearest nanosecond",
          "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  const std::vector<double> stamps = {0.0, 0.0004, 0.0006, 1.9996, 12.3454, 27091222544.4204, 9e12 + 0.25, -5.25};
  {
    auto w = TimelineWriter::open(opts(path, 0));
    REQUIRE(w.isOk());
    for (size_t i = 0; i < stamps.size(); ++i) {
      Event e = span(static_cast<int>(i), stamps[i]);
      e.durUs = stamps[i] < 0 ? 0.5 : stamps[i];
      (*w)->record(e);
    }
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* written : {"\"ts\":0.000,", "\"ts\":0.001,", "\"ts\":2.000,", "\"ts\":12.345,", "\"ts\":27091222544.420,",
                              "\"ts\":9000000000000.250,", "\"ts\":-5.250,", "\"dur\":12.345,", "\"dur\":0.500"}) {
    INFO(written);
    CHECK(text.find(written) != std::string::npos);
  }
  std::string error;
  hvd::Json trace = readTrace(path, error);
  REQUIRE(error.empty());
  CHECK(countNamed(trace, "ALLREDUCE") == static_cast<int>(stamps.size()));
}

TEST_CASE("the writer thread is named hvd-timeline and runs at nice 19 so that it yields to the rank's threads",
          "[unit][timeline]") {
  TempDir dir;
  auto w = TimelineWriter::open(opts(dir.path() + "/t.json", 0));
  REQUIRE(w.isOk());
  (*w)->record(span(1, 1));
  (*w)->flush();  // the thread has run its start-up by now
  int found = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "hvd-timeline") continue;
    ++found;
    // /proc/<tid>/stat: "pid (comm) state ..." with nice the 19th field; comm has no spaces here.
    std::ifstream stat(task.path() / "stat");
    std::vector<std::string> fields;
    for (std::string f; stat >> f;) fields.push_back(f);
    REQUIRE(fields.size() > 18);
    CHECK(fields[18] == "19");
  }
  CHECK(found == 1);
}

TEST_CASE("merging copies traces larger than its piece exactly and skips empty arrays and white space around them",
          "[unit][timeline]") {
  TempDir dir;
  std::string big = dir.path() + "/big.json";
  {
    hvd::timeline::WriterOptions o = opts(big, 1);
    o.queueCapacity = 1 << 17;
    auto w = TimelineWriter::open(o);
    REQUIRE(w.isOk());
    for (int i = 0; i < 30000; ++i) (*w)->record(span(i % 50, i));  // about 3 MiB: several pieces
  }
  std::ofstream(dir.path() + "/empty.json") << "  [ \n ]  \n";
  std::ofstream(dir.path() + "/spaced.json") << "\n\t[{\"name\":\"ALLREDUCE\",\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":1,\"dur\":1}]\n\n";
  std::string out = dir.path() + "/out.json";
  REQUIRE(hvd::timeline::mergeTraces({dir.path() + "/empty.json", big, dir.path() + "/spaced.json"}, out).isOk());
  std::string error;
  hvd::Json trace = readTrace(out, error);
  REQUIRE(error.empty());
  CHECK(countNamed(trace, "ALLREDUCE") == 30001);
  CHECK(trace.array().back()["pid"].number() == 2);
  for (const char* broken : {"[", "  ", "[{\"name\":1}", "{}]"}) {
    INFO(broken);
    std::ofstream(dir.path() + "/broken.json", std::ios::trunc) << broken;
    auto s = hvd::timeline::mergeTraces({big, dir.path() + "/broken.json"}, out);
    CHECK(s.code() == hvd::Errc::kInvalidArgument);
    CHECK(s.message().find("broken.json") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(out + ".merging"));
  hvd::Json still = readTrace(out, error);  // a failed merge leaves the earlier output as it was
  CHECK(error.empty());
}

TEST_CASE("writeSoon writes what is queued without waiting for the writer's tick", "[unit][timeline]") {
  TempDir dir;
  std::string path = dir.path() + "/t.json";
  hvd::timeline::WriterOptions o = opts(path, 0);
  o.writeEvery = std::chrono::hours(1);  // only writeSoon (or the end) can write these
  auto w = TimelineWriter::open(o);
  REQUIRE(w.isOk());
  for (int i = 0; i < 10; ++i) (*w)->record(span(1, i));
  (*w)->writeSoon();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int seen = 0;
  while (seen < 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string error;
    hvd::Json trace = readTrace(path, error);
    REQUIRE(error.empty());
    seen = countNamed(trace, "ALLREDUCE");
  }
  CHECK(seen == 10);
}

TEST_CASE("a track named with quotes, backslashes, control bytes and UTF-8 reads back as it was named", "[timeline]") {
  TempDir dir;
  const std::string name = std::string("grad \"w\" \\ tab\t nl\n bell\x07 del\x7f caf\xc3\xa9 ") + std::string(1, '\x01');
  {
    auto writer = TimelineWriter::open(opts(dir.path() + "/t.json", 0));
    REQUIRE(writer);
    Event track;
    track.phase = 'M';
    track.track = 3;
    track.text = name;
    (*writer)->record(track);
    (*writer)->flush();
  }
  std::string error;
  hvd::Json trace = readTrace(dir.path() + "/t.json", error);
  REQUIRE(error.empty());
  bool found = false;
  for (const hvd::Json& e : trace.array()) {
    if (e.has("tid") && e["tid"].number() == 3 && e.has("args") && e["args"].has("name")) {
      CHECK(e["args"]["name"].str() == name);
      found = true;
    }
  }
  CHECK(found);
}
