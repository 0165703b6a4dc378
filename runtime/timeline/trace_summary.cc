// runtime/timeline/trace_summary.cc: grouping a trace's complete events by tensor track.
// "Last ready": for the k-th occurrence of a tensor, the rank whose k-th negotiation began
// latest (it submitted last; the others waited for it).
#include "runtime/timeline/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/common/json_stream.h"

namespace hvd::timeline {
namespace {

bool isOperation(const std::string& name) {
  // The engine's operation spans (engine_timeline.cc's opName); the backend's own calls under them
  // (RING_ALLREDUCE, MPI_ALLTOALLV, ...) are not operations of their own.
  return name == "ALLREDUCE" || name == "BROADCAST" || name == "ALLGATHER" || name == "BARRIER" ||
         name == "REDUCESCATTER" || name == "ALLTOALL";
}

double numberOr(const Json& e, const char* key, double fallback) {
  if (!e.has(key)) return fallback;
  const auto* v = std::get_if<double>(&e[key].value);
  return v != nullptr ? *v : fallback;
}

std::string textOr(const Json& e, const char* key) {
  if (!e.has(key)) return "";
  const auto* v = std::get_if<std::string>(&e[key].value);
  return v != nullptr ? *v : "";
}

}  // namespace

void TraceSummarizer::add(const Json& e) {
  if (!e.isObject()) return;
  const std::string phase = textOr(e, "ph");
  const std::pair<double, double> key{numberOr(e, "pid", -1), numberOr(e, "tid", -1)};
  if (phase == "M") {
    if (textOr(e, "name") == "thread_name" && e.has("args")) names_[key] = textOr(e["args"], "name");
    return;
  }
  if (phase != "X") return;
  std::string name = textOr(e, "name");
  double durMs = numberOr(e, "dur", 0) / 1000.0;
  if (name.rfind("NEGOTIATE_", 0) == 0) {
    Track& t = tracks_[key];
    t.negotiateSum += durMs;
    t.negotiateMaxMs = std::max(t.negotiateMaxMs, durMs);
    ++t.negotiations;
    t.negotiationStarts.push_back(numberOr(e, "ts", 0));
  } else if (isOperation(name)) {
    Track& t = tracks_[key];
    ++t.ops;
    t.opSum += durMs;
    t.opMaxMs = std::max(t.opMaxMs, durMs);
    if (e.has("args")) t.bytesSum += numberOr(e["args"], "bytes", 0);
  }
}

std::vector<TensorSummary> TraceSummarizer::rows() const {
  struct Acc {
    TensorSummary row;
    double negotiateSum = 0, opSum = 0, bytesSum = 0;
    int negotiations = 0;
    std::map<int, std::vector<double>> starts;  // rank -> negotiation start times
  };
  std::map<std::string, Acc> acc;
  for (const auto& [key, t] : tracks_) {
    auto named = names_.find(key);
    if (named == names_.end()) continue;  // the engine's and the fusion tracks: no tensor
    Acc& a = acc[named->second];
    a.row.name = named->second;
    a.row.ops += t.ops;
    a.opSum += t.opSum;
    a.row.opMaxMs = std::max(a.row.opMaxMs, t.opMaxMs);
    a.bytesSum += t.bytesSum;
    a.negotiateSum += t.negotiateSum;
    a.row.negotiateMaxMs = std::max(a.row.negotiateMaxMs, t.negotiateMaxMs);
    a.negotiations += t.negotiations;
    if (!t.negotiationStarts.empty()) {
      auto& starts = a.starts[static_cast<int>(key.first)];
      starts.insert(starts.end(), t.negotiationStarts.begin(), t.negotiationStarts.end());
    }
  }
  std::vector<TensorSummary> rows;
  for (auto& [name, a] : acc) {
    if (a.row.ops == 0) continue;
    a.row.opMeanMs = a.opSum / a.row.ops;
    a.row.bytesPerOp = a.bytesSum / a.row.ops;
    a.row.negotiateMeanMs = a.negotiations > 0 ? a.negotiateSum / a.negotiations : 0;
    if (a.starts.size() > 1) {
      std::map<int, int> lastCount;
      size_t occurrences = a.starts.begin()->second.size();
      for (auto& [rank, times] : a.starts) {
        std::sort(times.begin(), times.end());
        occurrences = std::min(occurrences, times.size());
      }
      for (size_t k = 0; k < occurrences; ++k) {
        int last = -1;
        double latest = 0;
        for (const auto& [rank, times] : a.starts) {
          if (last < 0 || times[k] > latest) last = rank, latest = times[k];
        }
        ++lastCount[last];
      }
      for (const auto& [rank, n] : lastCount) {
        if (n > a.row.lastTimes) a.row.lastRank = rank, a.row.lastTimes = n;
      }
      a.row.compared = static_cast<int>(occurrences);
    }
    rows.push_back(a.row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TensorSummary& x, const TensorSummary& y) {
    return x.opMeanMs * x.ops > y.opMeanMs * y.ops;
  });
  return rows;
}

Result<std::vector<TensorSummary>> summarizeTrace(const Json& trace) {
  if (!trace.isArray()) return invalidArgument("not a Chrome trace: expected an array of events");
  TraceSummarizer summarizer;
  for (const Json& e : trace.array()) summarizer.add(e);
  return summarizer.rows();
}

Result<std::vector<TensorSummary>> summarizeTraceFile(const std::string& path) {
  TraceSummarizer summarizer;
  Status read = forEachArrayElement(path, [&](Json event) {
    summarizer.add(event);
    return Status::ok();
  });
  if (!read.isOk()) {
    // The file's own faults (missing, a pipe, unreadable) as they are; its text's with its name.
    const std::string& why = read.message();
    bool notAnArray = read.code() == Errc::kInvalidArgument &&
                      (why.rfind("offset ", 0) == 0 || why.rfind("the element at offset ", 0) == 0);
    if (!notAnArray) return read;
    return invalidArgument("'" + path + "' is not a Chrome trace in the JSON array format: " + read.message())
        .withHint("give a file --timeline-filename or hvdrun timeline merge wrote");
  }
  return summarizer.rows();
}

std::string formatSummary(const std::vector<TensorSummary>& rows) {
  size_t width = 6;
  for (const auto& r : rows) width = std::max(width, std::min<size_t>(r.name.size(), 48));
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %6s %12s %21s %21s  %s\n", static_cast<int>(width), "tensor", "ops", "bytes/op",
                "negotiate mean/max ms", "op mean/max ms", "last ready most often");
  out += line;
  for (const auto& r : rows) {
    std::string last = r.lastRank < 0 ? "-" : "rank " + std::to_string(r.lastRank) + " (" + std::to_string(r.lastTimes) +
                                                  " of " + std::to_string(r.compared) + ")";
    std::string name = r.name.size() > width ? r.name.substr(0, width - 3) + "..." : r.name;
    std::snprintf(line, sizeof line, "%-*s %6d %12.0f %10.3f / %-8.3f %10.3f / %-8.3f  %s\n", static_cast<int>(width),
                  name.c_str(), r.ops, r.bytesPerOp, r.negotiateMeanMs, r.negotiateMaxMs, r.opMeanMs, r.opMaxMs, last.c_str());
    out += line;
  }
  return out;
}

}  // namespace hvd::timeline
