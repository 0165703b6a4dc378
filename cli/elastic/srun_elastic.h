// cli/elastic/srun_elastic.h: an elastic job under srun (--kill-on-bad-exit=0, so a failed
// task leaves the step running). srun cannot tell hvdrun of one task's end, so the task
// shims' reports do, through the rendezvous, and the world is decided on the server's
// thread as they come in (thread-safe: a mutex guards what the reports change).
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/elastic/elastic_world.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

class SrunElastic {
 public:
  // Publishes the first world and follows the shims' reports at `server`.
  void start(const Options& o, const Plan& plan, RendezvousServer& server);

  // After srun: true when the job ended well, every failed rank's loss taken in stride (srun
  // exits with the worst task's code all the same); `result` then says so.
  bool finish(JobOutcome& result);

  // The ranks the job went on without: not why it ended.
  std::set<int> leftBehindRanks();

 private:
  static std::optional<int> cleanEndRank(const std::string& key);

  std::mutex mutex_;
  std::optional<ElasticWorld> world_;
  std::vector<RankFailure> leftBehind_;
  size_t badReports_ = 0;  // the shims' reports of ranks that failed by themselves
};

}  // namespace hvd::cli
