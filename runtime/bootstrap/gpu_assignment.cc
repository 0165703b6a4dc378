// runtime/bootstrap/gpu_assignment.cc: the verdict on the ranks' GPU reports.
#include "runtime/bootstrap/gpu_assignment.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace hvd::bootstrap {
namespace {

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, by)) parts.push_back(part);
  if (!text.empty() && text.back() == by) parts.emplace_back();
  return parts;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Entries in CUDA_VISIBLE_DEVICES ("0,1", "GPU-..,GPU-..").
int plannedCount(const GpuReport& r) {
  if (!r.visibleSet || r.visible.empty()) return 0;
  int n = 0;
  for (const auto& part : split(r.visible, ',')) n += !part.empty();
  return n;
}

// Keeps tabs and newlines out of a field (host names cannot hold them; be safe anyway).
std::string clean(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  return text;
}

}  // namespace

std::string encodeGpuReport(const GpuReport& r) {
  return std::to_string(r.rank) + '\t' + clean(r.host) + '\t' + clean(r.plannedHost) + '\t' +
         (r.visibleSet ? "1" : "0") + '\t' + clean(r.visible) + '\t' + std::to_string(r.driverGpus) + '\t' +
         clean(r.gpu) + '\t' + std::to_string(r.mps);
}

std::optional<GpuReport> decodeGpuReport(const std::string& text) {
  auto f = split(text, '\t');
  if (f.size() != 8 || (f[3] != "0" && f[3] != "1")) return std::nullopt;
  if (f[7] != "-1" && f[7] != "0" && f[7] != "1") return std::nullopt;
  GpuReport r;
  try {
    size_t used = 0;
    r.rank = std::stoi(f[0], &used);
    if (used != f[0].size()) return std::nullopt;
    r.driverGpus = std::stoi(f[5], &used);
    if (used != f[5].size()) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  r.host = f[1];
  r.plannedHost = f[2];
  r.visibleSet = f[3] == "1";
  r.visible = f[4];
  r.gpu = f[6];
  r.mps = std::stoi(f[7]);
  return r;
}

GpuVerdict checkGpuAssignment(std::span<const GpuReport> reports, bool allowShared) {
  GpuVerdict verdict;
  std::set<int> offenders;

  std::map<std::string, std::vector<int>> holders;  // GPU -> ranks
  for (const auto& r : reports) {
    if (!r.gpu.empty()) holders[r.gpu].push_back(r.rank);
  }
  std::map<int, const GpuReport*> byRank;
  for (const auto& r : reports) byRank[r.rank] = &r;
  for (auto& [gpu, ranks] : holders) {
    if (ranks.size() < 2) continue;
    verdict.shared = true;
    std::sort(ranks.begin(), ranks.end());
    const bool timeSliced = std::any_of(ranks.begin(), ranks.end(), [&](int r) { return byRank[r]->mps == 0; });
    if (timeSliced) {
      verdict.sharedWithoutMps += (verdict.sharedWithoutMps.empty() ? "" : "; ") + rankList(ranks) + " share " + gpu +
                                  " on " + byRank[ranks.front()]->host;
    }
  }
  if (!allowShared) {
    for (auto& [gpu, ranks] : holders) {
      if (ranks.size() < 2) continue;
      verdict.problems.push_back(rankList(ranks) + " share " + gpu);
      offenders.insert(ranks.begin(), ranks.end());
    }
  }

  for (const auto& r : reports) {
    int planned = plannedCount(r);
    if (r.driverGpus >= 0 && r.driverGpus < planned) {
      verdict.problems.push_back("rank " + std::to_string(r.rank) + " was given CUDA_VISIBLE_DEVICES=" + r.visible +
                                 " but the driver shows it " + std::to_string(r.driverGpus) + " GPU(s) on " + r.host);
      offenders.insert(r.rank);
    }
  }

  // The plan's hosts against the real ones, in the one direction that aliases and
  // containers cannot fake: ranks planned on one host must share a host name.
  std::map<std::string, std::map<std::string, std::vector<int>>> byPlan;  // planned -> real -> ranks
  for (const auto& r : reports) {
    if (!r.plannedHost.empty()) byPlan[r.plannedHost][r.host].push_back(r.rank);
  }
  for (const auto& [planned, real] : byPlan) {
    if (real.size() < 2) continue;
    std::string where;
    for (const auto& [host, ranks] : real) {
      where += (where.empty() ? "" : ", ") + host + " (" + rankList(ranks) + ")";
      offenders.insert(ranks.begin(), ranks.end());
    }
    verdict.problems.push_back("ranks planned on " + planned + " run on different hosts: " + where);
  }

  if (verdict.ok()) return verdict;
  std::vector<std::vector<std::string>> rows{{"rank", "host", "planned host", "CUDA_VISIBLE_DEVICES", "GPUs seen", "GPU"}};
  std::vector<const GpuReport*> sorted;
  for (const auto& r : reports) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  for (const GpuReport* r : sorted) {
    if (!offenders.count(r->rank)) continue;
    rows.push_back({std::to_string(r->rank), r->host, r->plannedHost.empty() ? "-" : r->plannedHost,
                    r->visibleSet ? (r->visible.empty() ? "\"\"" : r->visible) : "(unset)",
                    r->driverGpus < 0 ? "-" : std::to_string(r->driverGpus), r->gpu.empty() ? "-" : r->gpu});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = "   ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c] + (c + 1 < row.size() ? std::string(widths[c] - row[c].size() + 1, ' ') : "");
    }
    verdict.table += line + "\n";
  }
  size_t fine = reports.size() - offenders.size();
  if (fine > 0) verdict.table += "    (" + std::to_string(fine) + " other rank(s) fine, not shown)\n";
  return verdict;
}

}  // namespace hvd::bootstrap
