// cli/elastic/job_growth.h: an elastic job whose hosts change (--host-discovery-script).
// While the script gives a host more slots than ranks run there (in all, up to --max-np),
// more are started there and the job's next world has them: forked on this machine, or
// through a new host agent for each host and round over ssh. After a rank failed on a host
// no more are started there (horovodrun blacklists it). A host given fewer slots loses
// ranks (fewer()). The launch starts the processes (RankAdder): this file knows no
// launcher. Used on the supervisor's thread only.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/elastic/elastic_cpus.h"
#include "cli/elastic/elastic_gpus.h"
#include "cli/elastic/elastic_world.h"
#include "cli/elastic/host_discovery.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/supervise/agent_protocol.h"
#include "cli/supervise/rank_environment.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

// A rank the job adds: its worker number, its environment's parts as hvdrun knows them, and
// (over ssh, on a host whose devices and cores only its agent knows) the GPU positions and
// the block of cores chosen for it.
struct AddedRank {
  int worker = 0;
  RankEnvironment env;
  std::optional<GpuPositions> gpuPositions;
  std::optional<CpuBlock> cpuBlock;
};

// The environment of a rank the job adds, as hvdrun knows it: the plan's parts for `rank`
// (its identity in the world it first joins; the GPUs the launch gave it, if any), the job's
// part, and the elastic part with the world it joins after. Its host adds the threads and
// torch's error file, as for the job's first ranks.
RankEnvironment addedRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                     int worker, long long after);

// How the launch starts the ranks the job adds.
class RankAdder {
 public:
  virtual ~RankAdder() = default;
  // Whether the job grows onto other hosts (host agents over ssh), or on this machine only.
  virtual bool overSsh() const = 0;
  // A rank forked here, pinned to `cpus` (empty: unpinned).
  virtual RankProcess forkHere(const std::string& host, AddedRank rank, std::vector<int> cpus) = 0;
  // One host agent for the ranks added on `host` (`here`: this machine).
  virtual RankProcess startAgent(const std::string& host, bool here, std::vector<AddedRank> ranks) = 0;
};

class JobGrowth {
 public:
  JobGrowth(const Options& o, const Plan& plan, const JobVariables& job, ElasticWorld& world, RendezvousServer& server,
            HostDiscovery& discovery, RankAdder& adder);

  // The script's hosts by slots, marking each as listed.
  std::map<std::string, int> discoveredSlots();
  bool listed(const std::string& host) const { return listed_.count(host) > 0; }
  // A rank failed on `host`: no ranks start there for a while (--blacklist-cooldown-range),
  // or for the rest of the job.
  void rankFailed(const std::string& host);
  // Ranks to stop because the script gives their hosts fewer slots (newest first).
  std::vector<int> fewer();
  // Ranks to start where the script gives more slots.
  std::vector<RankProcess> more();

 private:
  bool isBlacklisted(const std::string& host) const;
  std::vector<DiscoveredHost> latestHosts();
  void knowGpus();
  void giveGpu(int worker, RankPlan& r);
  std::string hereName() const;
  bool isThisMachine(const std::string& host) const;
  std::optional<GpuPositions> gpuPositions(int worker, const std::string& host);
  std::optional<CpuBlock> cpuBlock(int added, const std::string& host);
  RankEnvironment rankEnvironment(int worker, const rendezvous::ElasticIdentity& id, const std::string& host,
                                  long long after);
  RankProcess forked(int worker, const rendezvous::ElasticIdentity& id, long long after);
  RankProcess agent(const std::string& host, const std::vector<int>& workers,
                    const std::map<int, rendezvous::ElasticIdentity>& identity, long long after);

  const Options& o_;
  const Plan& plan_;
  JobVariables job_;
  ElasticWorld& world_;
  RendezvousServer& server_;
  HostDiscovery& discovery_;
  RankAdder& adder_;
  // Hosts where a rank failed, until when (time_point::max(): for the rest of the job).
  std::map<std::string, std::chrono::steady_clock::time_point> blacklisted_;
  std::set<std::string> elsewhere_;      // hosts named that this launch cannot reach, said once
  std::set<std::string> listed_;         // hosts the script has named
  std::set<std::string> refusedShrink_;  // why a shrink could not be, said once
  std::optional<ElasticGpus> gpus_;      // this machine's, where the plan gives each rank its own
  bool pinning_ = false;                 // so it does
  bool noGpuSaid_ = false;
  bool twiceSaid_ = false;  // that the script names this machine twice
  // Over ssh, the GPUs of each host whose agents share them out, as positions in the host's
  // list of devices ("0", "1", ...), which only its agents know: the plan's ranks there hold
  // theirs by local rank (assignHostGpus's rule), and ranks added since the ones given them.
  std::map<std::string, ElasticGpus> positions_;
  // --bind-to: each host's blocks of cores (elastic_cpus.h), made at its first added rank.
  std::map<std::string, ElasticCpuBlocks> cpuBlocks_;
  std::set<std::string> unpinnedSaid_;  // hosts where an added rank found every block held
};

}  // namespace hvd::cli
