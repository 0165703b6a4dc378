// cli/rendezvous/launcher_reports.cc: the keys and the report's five numbers.
#include "cli/rendezvous/launcher_reports.h"

#include <algorithm>
#include <charconv>

namespace hvd::cli {

std::string recordedErrorKey(int rank) { return "launcher/recorded-error/" + std::to_string(rank); }

std::string endReportKey(long long index) { return std::string(kEndReportCountKey) + "/" + std::to_string(index); }

std::string cleanEndKey(int rank) { return "launcher/ended-cleanly/" + std::to_string(rank); }

std::string encodeTaskEndReport(const TaskEndReport& report) {
  return std::to_string(report.rank) + " " + std::to_string(report.end.exitCode) + " " +
         std::to_string(report.end.signal) + " " + (report.toldToStop ? "1" : "0") + " " +
         std::to_string(std::min<std::uint64_t>(report.oomKillsOnHost, 1 << 24));
}

// Four fields from an hvdrun before the OOM count, five since.
std::optional<TaskEndReport> decodeTaskEndReport(std::string_view text) {
  long long fields[5] = {};
  size_t at = 0;
  int n = 0;
  for (; n < 5 && at <= text.size(); ++n) {
    size_t end = text.find(' ', at);
    if (end == std::string_view::npos) end = text.size();
    if (end == at) return std::nullopt;
    auto [ptr, ec] = std::from_chars(text.data() + at, text.data() + end, fields[n]);
    if (ec != std::errc() || ptr != text.data() + end || fields[n] < 0 || fields[n] > (1 << 24)) return std::nullopt;
    at = end + 1;
  }
  if (n < 4 || at <= text.size() || fields[3] > 1) return std::nullopt;
  return TaskEndReport{static_cast<int>(fields[0]), TaskEnd{static_cast<int>(fields[1]), static_cast<int>(fields[2])},
                       fields[3] == 1, static_cast<std::uint64_t>(fields[4])};
}

std::optional<TaskEndReport> rootCauseOf(const std::vector<TaskEndReport>& inArrivalOrder) {
  const TaskEndReport* firstError = nullptr;
  for (const TaskEndReport& r : inArrivalOrder) {
    if (r.toldToStop) continue;
    if (r.end.signal != 0) return r;
    if (firstError == nullptr) firstError = &r;
  }
  if (firstError != nullptr) return *firstError;
  return std::nullopt;
}

}  // namespace hvd::cli
