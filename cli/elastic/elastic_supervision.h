// cli/elastic/elastic_supervision.h: an elastic job's supervision (--min-np, horovodrun's
// elastic training): its world, published at hvdrun's rendezvous before any rank starts and
// asked each time a rank ends whether the job goes on without it; with a host discovery
// script, the hosts and the ranks it adds (job_growth.h). Lives as long as the supervision.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/elastic/elastic_world.h"
#include "cli/elastic/host_discovery.h"
#include "cli/elastic/job_growth.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/supervise/rank_environment.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

// An elastic job's part of rank `worker`'s environment (its worker number is its first rank,
// elastic_world.h); nullopt for a job that is not elastic.
std::optional<ElasticVariables> elasticVariables(const Options& o, int worker);

// The ranks' HVD_TIMEOUT: hvdrun's --timeout, else what they inherit, else the runtime's
// default.
std::chrono::milliseconds ranksTimeout(const Options& o);

// Elastic training: a rank ended by itself. A failed one leaves the others to go on as the
// next world, when the job may; either way hvdrun says what happens to the job. A clean end
// is the training's end, which a world still forming would wait for in vain: the ranks
// waiting for it are stopped where the launch can stop a rank (canStop), and then told.
SupervisorOptions::AfterRankEnd elasticRankEnded(const Options& o, ElasticWorld& world, RendezvousServer& server,
                                                 const std::vector<int>& ranks, const RankFailure* failure,
                                                 bool canStop);

class ElasticSupervision {
 public:
  // Nothing for a job that is not elastic. Otherwise publishes the first world and sets
  // supervision's rankEnded and frozenFails; with a discovery script (which, failing before
  // the launch, stops it: UserError, exit 3) also changeRanks, adding ranks through `adder`.
  void start(const Options& o, const Plan& plan, const JobVariables& job, RendezvousServer* server,
             SupervisorOptions& supervision, RankAdder* adder);

 private:
  std::optional<ElasticWorld> world_;
  std::unique_ptr<HostDiscovery> discovery_;
  std::optional<JobGrowth> growth_;
};

}  // namespace hvd::cli
