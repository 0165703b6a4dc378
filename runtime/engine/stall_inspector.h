// runtime/engine/stall_inspector.h: which requests wait because some ranks have not
// submitted them. Each rank reports what it has pending (with how long it has waited);
// every rank gets every report (allgathered) and reaches the same findings, so a stall
// shutdown happens on all ranks at once. Pure: reports in, findings out.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hvd::engine {

struct PendingReport {
  struct Item {
    std::string name;  // unnamed requests: "unnamed collective #k" (k counts from 1)
    double waitedSeconds = 0;
  };
  std::vector<Item> items;
};

struct StallFinding {
  std::string name;
  std::vector<int> readyRanks, missingRanks;
  double waitedSeconds = 0;  // the longest any ready rank has waited
};

// Findings for every name pending on some ranks and not all, longest wait first (ties by
// name). reports: one per rank, in rank order.
std::vector<StallFinding> findStalls(std::span<const PendingReport> reports);

// The warning rank 0 prints: one line per finding, at most `limit` of them, then how many
// more. `threshold` names the setting in the text.
std::string formatStallWarning(std::span<const StallFinding> findings, double thresholdSeconds, size_t limit = 10);

}  // namespace hvd::engine
