// runtime/timeline/trace_summary.h: the answer to "which tensor was slow, and who was
// late", from a trace, for a terminal (hvdrun timeline summary). Pure: a parsed trace in,
// rows out.
#pragma once

#include <string>
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

// One row per tensor track that has operations, most total operation time first.
// kInvalidArgument when the document is not a trace's array of events.
Result<std::vector<TensorSummary>> summarizeTrace(const Json& trace);

// The table: tensor, ops, bytes/op, negotiate mean/max, op mean/max, last ready.
std::string formatSummary(const std::vector<TensorSummary>& rows);

}  // namespace hvd::timeline
