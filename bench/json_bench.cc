// bench/json_bench.cc: the JSON the project reads and writes, beside nlohmann/json used
// directly and (when installed) simdjson, in one run. Reading: a generated Chrome trace of
// about 50 MB, parsed whole and walked element by element. Writing: timeline events as a
// rank's writer thread formats them, and a 512-rank plan as `hvdrun --dry-run --format
// json` prints it. Prints best-of-3 figures; asserts nothing. docs/design-decisions.md
// says what was chosen from them.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#if HVD_BENCH_SIMDJSON
#include <simdjson.h>
#endif

#include "cli/plan/json_writer.h"
#include "runtime/common/json.h"
#include "runtime/common/json_stream.h"
#include "runtime/timeline/timeline_writer.h"

namespace {

double bestSeconds(const std::function<void()>& work) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Events shaped as the timeline writes them, of a model with 245 gradient tensors.
std::string traceText(size_t bytes) {
  std::string text = "[\n";
  for (size_t i = 0; text.size() < bytes; ++i) {
    if (i > 0) text += ",\n";
    text += "{\"name\":\"ALLREDUCE\",\"ph\":\"X\",\"pid\":" + std::to_string(i % 8) + ",\"tid\":" +
            std::to_string(i % 245) + ",\"ts\":" + std::to_string(1000000.0 + static_cast<double>(i) * 3.217) +
            ",\"dur\":12.5,\"args\":{\"dtype\":\"float32\",\"count\":" + std::to_string(4096 * (i % 97)) + "}}";
  }
  return text + "\n]\n";
}

void row(const char* what, const char* who, double seconds, double megabytes, const char* unit = "MB/s") {
  std::printf("%-34s %-26s %9.3f s  %8.1f %s\n", what, who, seconds, megabytes / seconds, unit);
}

}  // namespace

int main() {
  const std::string text = traceText(size_t{50} << 20);
  const double mb = static_cast<double>(text.size()) / 1e6;
  char path[] = "/tmp/hvd-json-bench-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return 1;
  ::close(fd);
  std::printf("reading a %.1f MB Chrome trace\n", mb);

  size_t n = 0;
  row("parse whole", "hvd::parseJson", bestSeconds([&] { n = hvd::parseJson(text)->array().size(); }), mb);
  row("parse whole", "nlohmann::json::parse", bestSeconds([&] { n = nlohmann::json::parse(text).size(); }), mb);
#if HVD_BENCH_SIMDJSON
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  row("parse whole", "simdjson dom (no offsets)",
      bestSeconds([&] { n = parser.parse(padded).get_array().size(); }), mb);
#else
  std::printf("%-34s %-26s not installed (libsimdjson-dev)\n", "parse whole", "simdjson");
#endif
  row("element by element, from the file", "hvd::forEachArrayElement", bestSeconds([&] {
        n = 0;
        (void)hvd::forEachArrayElement(path, [&](hvd::Json) { ++n; return hvd::Status::ok(); });
      }),
      mb);
  ::unlink(path);

  // Writing: a million events through the timeline's writer, and the same events as
  // nlohmann objects dumped one by one.
  const int events = 1000000;
  std::string file = std::string("/tmp/hvd-json-bench-trace-") + std::to_string(::getpid()) + ".json";
  double ours = bestSeconds([&] {
    hvd::timeline::WriterOptions options;
    options.path = file;
    options.maxBytes = 1ull << 30;
    options.queueCapacity = events;
    auto writer = hvd::timeline::TimelineWriter::open(options);
    std::vector<hvd::timeline::Event> batch(events);
    for (int i = 0; i < events; ++i) {
      batch[i] = {'X', "ALLREDUCE", i % 245, 1000000.0 + i * 3.217, 12.5, 7, static_cast<std::uint64_t>(4096 * (i % 97)), ""};
    }
    (*writer)->record(batch);
    (*writer)->flush();
  });
  ::unlink(file.c_str());
  row("write 1M timeline events", "hvd TimelineWriter (to file)", ours, events / 1e6, "M events/s");
  std::string out;
  double theirs = bestSeconds([&] {
    out.clear();
    for (int i = 0; i < events; ++i) {
      nlohmann::ordered_json e = {{"name", "ALLREDUCE"}, {"ph", "X"}, {"pid", 0}, {"tid", i % 245},
                                  {"ts", 1000000.0 + i * 3.217}, {"dur", 12.5},
                                  {"args", {{"dtype", "float32"}, {"count", 4096 * (i % 97)}}}};
      out += ",\n";
      out += e.dump();
    }
  });
  row("write 1M timeline events", "nlohmann dump (to memory)", theirs, events / 1e6, "M events/s");

  const int ranks = 512;
  double plan = bestSeconds([&] {
    for (int repeat = 0; repeat < 100; ++repeat) {
      hvd::cli::JsonWriter w;
      w.beginObject().key("ranks").beginArray();
      for (int r = 0; r < ranks; ++r) {
        w.beginObject().key("rank").value(r).key("host").value("gpu-node-" + std::to_string(r / 8));
        w.key("local_rank").value(r % 8).key("argv").beginArray().value("python").value("train.py").endArray().endObject();
      }
      w.endArray().endObject();
      n += w.str().size();
    }
  });
  row("write a 512-rank plan, 100 times", "hvd::cli::JsonWriter", plan, 100, "plans/s");
  double planTheirs = bestSeconds([&] {
    for (int repeat = 0; repeat < 100; ++repeat) {
      nlohmann::ordered_json doc;
      auto& list = doc["ranks"] = nlohmann::ordered_json::array();
      for (int r = 0; r < ranks; ++r) {
        list.push_back({{"rank", r}, {"host", "gpu-node-" + std::to_string(r / 8)}, {"local_rank", r % 8},
                        {"argv", {"python", "train.py"}}});
      }
      n += doc.dump().size();
    }
  });
  row("write a 512-rank plan, 100 times", "nlohmann::ordered_json", planTheirs, 100, "plans/s");
  return n == 0;
}
