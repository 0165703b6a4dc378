// runtime/timeline/trace_summary.h: the answer to "which tensor was slow, and who was
// late", from a trace, for a terminal (hvdrun timeline summary): events in, one at a time,
// rows out. A merged trace holds every rank's events, gigabytes for a large job, so the
// file is read an event at a time and only per-track sums are kept.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/json.h"
#include "runtime/common/status.h"

namespace hvd::timeline {

struct TensorSummary {
  std::string name;
  int ops = 0;                  // operations recorded, every rank's counted
  double bytesPerOp = 0;
  double negotiateMeanMs = 0, negotiateMaxMs = 0;  // submission until every rank had it
  double opMeanMs = 0, opMaxMs = 0;
  int lastRank = -1;            // the rank that submitted last most often (-1: one rank only)
  int lastTimes = 0, compared = 0;  // how often, out of how many occurrences
};

// Sums of a trace's events, in any order (a track's name may come after its events).
class TraceSummarizer {
 public:
  void add(const Json& event);
  // One row per tensor track that has operations, most total operation time first.
  std::vector<TensorSummary> rows() const;

 private:
  struct Track {
    int ops = 0, negotiations = 0;
    double opSum = 0, opMaxMs = 0, bytesSum = 0, negotiateSum = 0, negotiateMaxMs = 0;
    std::vector<double> negotiationStarts;
  };
  std::map<std::pair<double, double>, std::string> names_;  // (pid, tid) -> tensor
  std::map<std::pair<double, double>, Track> tracks_;
};

// The rows of a parsed trace; kInvalidArgument when it is not an array of events.
Result<std::vector<TensorSummary>> summarizeTrace(const Json& trace);
// The rows of the trace file at `path`, read an event at a time; kInvalidArgument naming
// the file and the offset when it is not a JSON array, kNotFound when it does not exist.
Result<std::vector<TensorSummary>> summarizeTraceFile(const std::string& path);

// The table: tensor, ops, bytes/op, negotiate mean/max, op mean/max, last ready.
std::string formatSummary(const std::vector<TensorSummary>& rows);

}  // namespace hvd::timeline
