// cli/launch/launcher_outcome.cc: the shims' reports and the launcher's end, adopted.
#include "cli/launch/launcher_outcome.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "cli/rendezvous/launcher_reports.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

long long reportsInNow(const RendezvousServer& server) {
  auto count = server.value(kEndReportCountKey);
  return count ? std::atoll(count->c_str()) : 0;
}

std::optional<RankFailure> rootCauseFromShims(const RendezvousServer* server, const JobOutcome& result,
                                              const std::set<int>& leftBehind, std::optional<long long> reportLimit) {
  if (server == nullptr || (result.exitCode == 0 && result.interruptSignal == 0)) return std::nullopt;
  long long n = reportsInNow(*server);
  if (reportLimit) n = std::min(n, *reportLimit);
  std::vector<TaskEndReport> reports;
  for (long long i = 1; i <= n; ++i) {
    auto text = server->value(endReportKey(i));  // missing if its shim died between add and set
    auto report = text ? decodeTaskEndReport(*text) : std::nullopt;
    if (report && !leftBehind.count(report->rank)) reports.push_back(*report);
  }
  auto cause = rootCauseOf(reports);
  if (!cause) return std::nullopt;
  RankFailure f;
  f.rank = cause->rank;
  f.exitCode = cause->end.exitCode;
  f.signal = cause->end.signal;
  f.oomKillsOnHost = cause->oomKillsOnHost;
  // An error exit blamed on a rank that went first (its runtime's peer-gone report), which its
  // shim said had ended cleanly: the rank that returned early, named in the report.
  if (f.signal == 0) {
    std::set<int> seen{f.rank};
    int went = f.rank;
    while (auto text = server->value(rendezvous::peerGoneKey(went))) {
      auto next = rendezvous::parsePeerGone(*text);
      if (!next || !seen.insert(*next).second) break;
      went = *next;
    }
    if (went != f.rank && server->value(cleanEndKey(went))) f.peerEndedCleanly = went;
  }
  return f;
}

void adoptLauncherFailure(JobOutcome& result, std::optional<RankFailure> fromShims,
                          std::optional<RankFailure> fromWords, const Plan& plan, const std::string& launcher) {
  if (result.interruptSignal != 0) result.ranksStopped = static_cast<int>(plan.ranks.size());
  if (result.ranksStoppedAfterPreemption > 0) return;  // hvdrun stopped the step itself
  if (!result.neverReady.empty()) return;
  // Stopped by hvdrun itself (a signal, its console gone): a rank whose shim reported a
  // failure before any stop reached it is still the root cause; what srun or mpirun say of
  // the tasks they stopped is not.
  if (result.interruptSignal != 0 && !fromShims) return;
  std::optional<RankFailure> failure = fromShims ? std::move(fromShims) : std::move(fromWords);
  if (!failure) {
    if (!result.firstFailure) return;
    result.firstFailure->launcher = launcher;
    if (auto it = result.launcherStderr.find(-1); it != result.launcherStderr.end()) {
      result.firstFailure->lastStderrLines = it->second;
    }
    return;
  }
  if (failure->host.empty() && failure->rank >= 0 && failure->rank < static_cast<int>(plan.ranks.size())) {
    failure->host = plan.ranks[static_cast<size_t>(failure->rank)].where.host;
  }
  failure->when = nowIso8601();
  if (auto it = result.launcherStderr.find(failure->rank); it != result.launcherStderr.end()) {
    failure->lastStderrLines = it->second;
  }
  result.exitCode = failure->signal != 0 ? 128 + failure->signal : failure->exitCode;
  result.ranksStopped = static_cast<int>(plan.ranks.size()) - 1;
  result.firstFailure = std::move(failure);
}

void adoptCoordinatorEnd(JobOutcome& result, const RendezvousServer* server) {
  if (server == nullptr || result.firstFailure || result.interruptSignal != 0 || result.exitCode != 0) return;
  if (!server->value(kCoordinatorDoneKey)) return;
  auto stopped = server->value(kStoppedAfterCoordinatorKey);
  result.ranksStoppedAfterCoordinator = stopped ? std::atoi(stopped->c_str()) : 0;
}

}  // namespace hvd::cli
