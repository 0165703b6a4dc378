// runtime/engine/stall_inspector.cc: set arithmetic over the ranks' reports.
#include "runtime/engine/stall_inspector.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "runtime/engine/message_table.h"

namespace hvd::engine {

std::vector<StallFinding> findStalls(std::span<const PendingReport> reports) {
  std::map<std::string, StallFinding> byName;
  for (size_t r = 0; r < reports.size(); ++r) {
    for (const auto& item : reports[r].items) {
      StallFinding& f = byName[item.name];
      f.name = item.name;
      f.readyRanks.push_back(static_cast<int>(r));
      f.waitedSeconds = std::max(f.waitedSeconds, item.waitedSeconds);
    }
  }
  std::vector<StallFinding> findings;
  for (auto& [name, f] : byName) {
    if (f.readyRanks.size() == reports.size()) continue;
    for (int r = 0; r < static_cast<int>(reports.size()); ++r) {
      if (!std::binary_search(f.readyRanks.begin(), f.readyRanks.end(), r)) f.missingRanks.push_back(r);
    }
    findings.push_back(std::move(f));
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const StallFinding& a, const StallFinding& b) { return a.waitedSeconds > b.waitedSeconds; });
  return findings;
}

std::string formatStallWarning(std::span<const StallFinding> findings, double thresholdSeconds, size_t limit) {
  std::string text = "some ranks have waited more than " + std::to_string(static_cast<long long>(std::lround(thresholdSeconds))) +
                     " s for collectives that other ranks have not submitted (a rank skipped a step, or named a "
                     "tensor differently):";
  size_t shown = std::min(limit, findings.size());
  for (size_t i = 0; i < shown; ++i) {
    const StallFinding& f = findings[i];
    text += "\n  '" + f.name + "': waiting " + std::to_string(static_cast<long long>(f.waitedSeconds)) + " s on " +
            rankList(f.readyRanks) + "; never submitted by " + rankList(f.missingRanks);
  }
  if (findings.size() > shown) text += "\n  ... and " + std::to_string(findings.size() - shown) + " more";
  return text;
}

}  // namespace hvd::engine
