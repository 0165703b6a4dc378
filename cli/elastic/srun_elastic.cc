// cli/elastic/srun_elastic.cc: the shims' reports, read as they come.
#include "cli/elastic/srun_elastic.h"

#include "cli/elastic/elastic_supervision.h"
#include "cli/rendezvous/launcher_reports.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

void SrunElastic::start(const Options& o, const Plan& plan, RendezvousServer& server) {
  std::vector<std::string> hosts;
  for (const RankPlan& r : plan.ranks) hosts.push_back(r.where.host);
  world_.emplace(std::move(hosts), o.minNp, o.resetLimit);
  auto first = world_->firstWorld();
  server.publish(first.values, first.abandonPrefix, "");
  const std::string reports = std::string(kEndReportCountKey) + "/";
  server.onSet([this, &o, &plan, &server, reports](const std::string& key, const std::string& value) {
    std::optional<int> rank;
    std::optional<RankFailure> failure;
    if (key.rfind(reports, 0) == 0) {
      auto report = decodeTaskEndReport(value);
      if (!report || report->toldToStop) return;  // srun stopping the step is no rank's failure
      rank = report->rank;
      failure.emplace();
      failure->rank = report->rank;
      failure->exitCode = report->end.exitCode;
      failure->signal = report->end.signal;
      failure->oomKillsOnHost = report->oomKillsOnHost;
      failure->when = nowIso8601();
      if (*rank >= 0 && *rank < static_cast<int>(plan.ranks.size())) {
        failure->host = plan.ranks[static_cast<size_t>(*rank)].where.host;
      }
    } else if (auto ended = cleanEndRank(key)) {
      rank = ended;
    }
    if (!rank) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure) ++badReports_;
    // srun cannot stop one task of its step: ranks waiting in a world that will not form are
    // told so at once (their init() fails saying why) instead (AfterRankEnd::stop).
    if (elasticRankEnded(o, *world_, server, {*rank}, failure ? &*failure : nullptr, false).goesOn && failure) {
      leftBehind_.push_back(*failure);
    }
  });
}

bool SrunElastic::finish(JobOutcome& result) {
  if (!world_) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  result.leftBehind = leftBehind_;
  if (world_->ended() || result.interruptSignal != 0 || !result.neverReady.empty() || leftBehind_.empty() ||
      result.exitCode == 0) {
    return false;
  }
  // Every bad end the shims reported is one the job went on without; a task that ended badly
  // without a report (its shim lost with it) is not, and fails the job.
  if (badReports_ != leftBehind_.size()) return false;
  result.exitCode = 0;
  result.firstFailure.reset();
  return true;
}

std::set<int> SrunElastic::leftBehindRanks() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<int> ranks;
  for (const RankFailure& f : leftBehind_) ranks.insert(f.rank);
  return ranks;
}

std::optional<int> SrunElastic::cleanEndRank(const std::string& key) {
  const std::string prefix = cleanEndKey(0).substr(0, cleanEndKey(0).size() - 1);
  if (key.rfind(prefix, 0) != 0) return std::nullopt;
  return rendezvous::parsePeerGone(std::string_view(key).substr(prefix.size()));  // a rank number
}

}  // namespace hvd::cli
