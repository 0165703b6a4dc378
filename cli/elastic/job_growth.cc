// cli/elastic/job_growth.cc: which hosts get ranks, and each added rank's GPUs and cores.
#include "cli/elastic/job_growth.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "cli/elastic/elastic_supervision.h"
#include "cli/os/console.h"
#include "cli/os/cpu_topology.h"
#include "cli/os/machine.h"
#include "cli/plan/cpu_binding.h"
#include "cli/plan/host_gpus.h"
#include "cli/supervise/rank_failure.h"

namespace hvd::cli {

RankEnvironment addedRankEnvironment(const Options& o, const Plan& plan, const RankPlan& rank, const JobVariables& job,
                                     int worker, long long after) {
  RankEnvironment env = RankEnvironment::fromPlan(plan, rank);
  env.job(job);
  ElasticVariables elastic = elasticVariables(o, worker).value_or(ElasticVariables{worker, 0, std::nullopt});
  elastic.after = after;
  env.elastic(elastic);
  return env;
}

JobGrowth::JobGrowth(const Options& o, const Plan& plan, const JobVariables& job, ElasticWorld& world,
                     RendezvousServer& server, HostDiscovery& discovery, RankAdder& adder)
    : o_(o), plan_(plan), job_(job), world_(world), server_(server), discovery_(discovery), adder_(adder) {}

void JobGrowth::rankFailed(const std::string& host) {
  const std::string where = isThisMachine(host) ? hereName() : host;
  const auto now = std::chrono::steady_clock::now();
  if (auto it = blacklisted_.find(where); it != blacklisted_.end() && it->second > now) return;  // said already
  if (o_.cooldownMax == 0) {
    blacklisted_[where] = std::chrono::steady_clock::time_point::max();
    printTo(stderr, "hvdrun: a rank failed on {}, so hvdrun starts no more ranks there (--host-discovery-script)\n",
            where);
    return;
  }
  // A random cooldown in the range, as horovodrun's: hosts that failed together do not all
  // come back at once.
  static std::mt19937 random{std::random_device{}()};
  const int seconds = std::uniform_int_distribution<int>(o_.cooldownMin, o_.cooldownMax)(random);
  blacklisted_[where] = now + std::chrono::seconds(seconds);
  printTo(stderr, "hvdrun: a rank failed on {}, so hvdrun starts no ranks there for {} s "
                  "(--blacklist-cooldown-range)\n", where, seconds);
}

bool JobGrowth::isBlacklisted(const std::string& host) const {
  auto it = blacklisted_.find(host);
  return it != blacklisted_.end() && std::chrono::steady_clock::now() < it->second;
}

// The script's hosts, as this launch names them (this machine: the plan's name for it). A
// second name of this machine (localhost and its host name) is left out, said once: each
// added ranks for itself.
std::vector<DiscoveredHost> JobGrowth::latestHosts() {
  std::vector<DiscoveredHost> hosts;
  std::optional<DiscoveredHost> here;  // the line that named this machine first
  for (const DiscoveredHost& h : discovery_.latest()) {
    if (!isThisMachine(h.host)) {
      hosts.push_back(h);
      continue;
    }
    if (here) {
      if (!twiceSaid_) {
        twiceSaid_ = true;
        printTo(stderr, "hvdrun: warning: the host discovery script names this machine twice ('{}' and '{}'): "
                        "hvdrun takes the first ({}:{})\n", here->host, h.host, here->host, here->slots);
      }
      continue;
    }
    here = h;
    hosts.push_back({hereName(), h.slots});
  }
  return hosts;
}

std::map<std::string, int> JobGrowth::discoveredSlots() {
  std::map<std::string, int> slots;
  for (const DiscoveredHost& h : latestHosts()) {
    slots[h.host] = h.slots;
    listed_.insert(h.host);
  }
  return slots;
}

// A host the script listed and lists no more, or with fewer slots than ranks run there: the
// excess ranks (the newest first) leave for the next world, stopped by hvdrun, as Horovod
// stops a removed host's workers. Over ssh a host agent stops those of its ranks that go
// ("stop <rank>") and keeps the others, or, when all of them go, is stopped itself. A host
// the script never named (-H's, perhaps under another name) is left alone. Never below
// --min-np: the ranks then keep running, said once.
std::vector<int> JobGrowth::fewer() {
  if (world_.ended() || world_.finishing()) return {};
  std::map<std::string, int> slots = discoveredSlots();
  std::map<std::string, int> running;
  for (int w : world_.running()) ++running[world_.hostOf(w)];
  std::map<std::string, std::vector<int>> removing;  // by host
  const std::vector<int>& order = world_.running();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::string& host = world_.hostOf(*it);
    const int allowed = slots.count(host) ? slots.at(host) : 0;
    if (!listed_.count(host) || running[host] <= allowed) continue;
    removing[host].insert(removing[host].begin(), *it);
    --running[host];
  }
  std::vector<int> all;
  for (const auto& [host, workers] : removing) all.insert(all.end(), workers.begin(), workers.end());
  if (all.empty()) return {};
  auto change = world_.workersRemoved(all);
  if (!change.goesOn) {
    if (!change.why.empty() && refusedShrink_.insert(change.why).second) {
      printTo(stderr, "hvdrun: warning: the host discovery script gives fewer slots than rank(s) {} run on, but "
                      "they keep running: {}\n", rankListText(all, 32), change.why);
    }
    return {};
  }
  server_.publish(change.keys.values, change.keys.abandonPrefix, "the job's world shrank while this rank joined it");
  for (const auto& [host, workers] : removing) {
    const int left = slots.count(host) ? slots.at(host) : 0;
    printTo(stderr, "hvdrun: the host discovery script {} {}: stopping rank(s) {} there; the job's world {} has "
                    "the other {} rank(s)\n",
            left == 0 ? "no longer lists" : "gives " + std::to_string(left) + " slot(s) on", host,
            rankListText(workers, 32), world_.generation(), world_.size());
  }
  return all;
}

std::vector<RankProcess> JobGrowth::more() {
  std::vector<RankProcess> started;
  if (world_.ended()) return started;
  std::vector<std::string> hosts;  // one entry per rank to add
  int total = world_.size();
  for (const DiscoveredHost& h : latestHosts()) {
    const std::string& host = h.host;
    if (isBlacklisted(host)) continue;
    if (!adder_.overSsh() && host != plan_.ranks.front().where.host) {
      if (elsewhere_.insert(h.host).second) {
        printTo(stderr, "hvdrun: warning: the host discovery script names {}, which is not this machine: a job "
                        "hvdrun runs on this machine alone grows here only (give -H to run over ssh)\n", h.host);
      }
      continue;
    }
    int adding = h.slots - world_.runningOn(host);
    if (o_.maxNp > 0) adding = std::min(adding, o_.maxNp - total);
    for (int i = 0; i < adding; ++i) hosts.push_back(host);
    total += std::max(adding, 0);
  }
  if (hosts.empty()) return started;
  auto grown = world_.addWorkers(hosts);
  if (grown.workers.empty()) return started;
  server_.publish(grown.keys.values, grown.keys.abandonPrefix, "the job's world grew while this rank joined it");
  // Each host's new ranks, in worker order.
  std::map<std::string, std::vector<int>> byHost;
  for (size_t i = 0; i < grown.workers.size(); ++i) byHost[hosts[i]].push_back(grown.workers[i]);
  std::map<int, rendezvous::ElasticIdentity> identity;
  for (size_t i = 0; i < grown.workers.size(); ++i) identity[grown.workers[i]] = grown.identities[i];
  for (const auto& [host, workers] : byHost) {
    printTo(stderr, "hvdrun: the host discovery script gives {} {} more slot(s): started rank(s) {} there; the "
                    "job's world {} has {} rank(s)\n",
            host, workers.size(),
            workers.size() == 1 ? std::to_string(workers.front())
                                : fmt::format("{}-{}", workers.front(), workers.back()),  // new, so in a row
            world_.generation(), world_.size());
    if (!adder_.overSsh()) {
      for (int worker : workers) started.push_back(forked(worker, identity.at(worker), grown.after));
    } else {
      started.push_back(agent(host, workers, identity, grown.after));
    }
  }
  return started;
}

// The plan's GPUs of this machine, where it gives each rank its own (--gpus-per-rank).
void JobGrowth::knowGpus() {
  if (gpus_) return;
  const std::string& here = plan_.ranks.front().where.host;
  auto host = std::find_if(plan_.hosts.begin(), plan_.hosts.end(), [&](const HostPlan& h) { return h.host == here; });
  std::map<int, std::vector<std::string>> own;
  for (const RankPlan& r : plan_.ranks) {
    if (r.where.host == here && static_cast<int>(r.gpus.size()) == o_.gpusPerRank) own[r.where.rank] = r.gpus;
  }
  pinning_ = o_.gpusPerRank >= 1 && !own.empty() && host != plan_.hosts.end();
  gpus_.emplace(pinning_ ? host->devices : std::vector<std::string>{}, std::move(own),
                pinning_ && host->gpusByLocalRank, o_.gpusPerRank);
}

// A forked rank's GPUs: devices no running rank here holds (elastic_gpus.h).
void JobGrowth::giveGpu(int worker, RankPlan& r) {
  knowGpus();
  std::vector<int> localOrder;
  for (int w : world_.running()) {
    if (world_.hostOf(w) == r.where.host) localOrder.push_back(w);
  }
  if (auto seen = gpus_->give(worker, localOrder)) {
    r.gpus = seen->own;
    r.visibleGpus = seen->visible;
    r.localGpu = seen->localGpu;
  } else if (pinning_ && !noGpuSaid_) {
    noGpuSaid_ = true;
    const std::string held = o_.gpusPerRank == 1
                                 ? "every GPU of " + r.where.host + " is held by a running rank"
                                 : "fewer than " + std::to_string(o_.gpusPerRank) + " GPUs of " + r.where.host +
                                       " are free of running ranks";
    printTo(stderr, "hvdrun: warning: {}: rank {} and later ones added there get none of their own (they see "
                    "hvdrun's)\n", held, worker);
  }
}

// The plan's name for this machine: rank 0's host when every rank runs here; over ssh the
// plan's host that is this machine, else its own name. (Over ssh rank 0's host is another
// one: taken for this machine, a rank added there was started here under its name, and
// failed to listen on that host's address.)
std::string JobGrowth::hereName() const {
  if (!adder_.overSsh()) return plan_.ranks.front().where.host;
  auto local = std::find_if(plan_.hosts.begin(), plan_.hosts.end(), [](const HostPlan& h) { return h.local; });
  return local != plan_.hosts.end() ? local->host : hostName();
}

bool JobGrowth::isThisMachine(const std::string& host) const {
  return host == "localhost" || host == "127.0.0.1" || host == hostName() || host == hereName();
}

// Over ssh, the positions in `host`'s devices for a rank added there: ones no running rank
// there holds, seen as the plan's rule has it (elastic_gpus.h). nullopt where hvdrun gives no
// GPUs, shares them round robin (--oversubscribe-gpus), or knows the host's devices itself.
std::optional<GpuPositions> JobGrowth::gpuPositions(int worker, const std::string& host) {
  if (o_.noGpu || o_.gpusPerRank < 1 || o_.oversubscribeGpus || isThisMachine(host)) return std::nullopt;
  auto inPlan = std::find_if(plan_.hosts.begin(), plan_.hosts.end(), [&](const HostPlan& h) { return h.host == host; });
  if (inPlan != plan_.hosts.end() && !agentSharesOutGpus(o_.noGpu, *inPlan)) return std::nullopt;
  auto it = positions_.find(host);
  if (it == positions_.end()) {
    // Far more positions than any host has devices: the agent checks them against its own.
    std::vector<std::string> all;
    for (int i = 0; i < 4096; ++i) all.push_back(std::to_string(i));
    std::map<int, std::vector<std::string>> own;
    int index = 0;
    for (const RankPlan& r : plan_.ranks) {
      if (r.where.host != host || !usesGpu(r.role)) continue;
      for (int k = 0; k < o_.gpusPerRank; ++k) own[r.where.rank].push_back(std::to_string(index * o_.gpusPerRank + k));
      ++index;
    }
    it = positions_.emplace(host, ElasticGpus(std::move(all), std::move(own), !o_.tfConfig, o_.gpusPerRank)).first;
  }
  std::vector<int> localOrder;
  for (int w : world_.running()) {
    if (world_.hostOf(w) == host) localOrder.push_back(w);
  }
  auto seen = it->second.give(worker, localOrder);
  if (!seen) return std::nullopt;
  auto numbers = [](const std::vector<std::string>& names) {
    std::vector<int> out;
    for (const std::string& n : names) out.push_back(std::stoi(n));
    return out;
  };
  return GpuPositions{numbers(seen->own), numbers(seen->visible), seen->localGpu};
}

// --bind-to: the block of `host`'s cores for worker `added` (elastic_cpus.h): the plan split
// them into one block per rank it put there (a host it put none on: one per slot the script
// gives it now). nullopt where the rank runs unpinned, said once per host.
std::optional<CpuBlock> JobGrowth::cpuBlock(int added, const std::string& host) {
  if (plan_.bindTo == BindTo::kNone) return std::nullopt;
  auto it = cpuBlocks_.find(host);
  if (it == cpuBlocks_.end()) {
    std::map<int, int> own;
    for (const RankPlan& r : plan_.ranks) {
      if (r.where.host == host) own[r.where.rank] = r.where.localRank;
    }
    int blocks = static_cast<int>(own.size());
    for (const DiscoveredHost& h : latestHosts()) {
      if (blocks == 0 && h.host == host) blocks = h.slots;
    }
    it = cpuBlocks_.emplace(host, ElasticCpuBlocks(plan_.bindTo, blocks, std::move(own))).first;
  }
  std::vector<int> localOrder;
  for (int w : world_.running()) {
    if (world_.hostOf(w) == host) localOrder.push_back(w);
  }
  auto block = it->second.give(added, localOrder);
  if (!block) {
    if (unpinnedSaid_.insert(host).second) {
      printTo(stderr, "hvdrun: warning: --bind-to {}: every block of cores on {} is held by a running rank, so "
                      "rank {} and later ones added there run unpinned\n", bindToName(plan_.bindTo), host, added);
    }
    return std::nullopt;
  }
  return CpuBlock{*block, it->second.blocks()};
}

// A new rank's variables: its rank, size, local and cross ranks in the world it first joins
// (HVD_RANK, RANK, LOCAL_RANK, ...: later worlds change only the runtime's), its worker
// number (HVD_ELASTIC_WORKER) and, forked here, a GPU of its own.
RankEnvironment JobGrowth::rankEnvironment(int worker, const rendezvous::ElasticIdentity& id, const std::string& host,
                                           long long after) {
  RankPlan r = plan_.ranks.front();
  r.where = {id.rank, id.size, id.localRank, id.localSize, id.crossRank, id.crossSize, host};
  r.gpus.clear();
  r.gpuSlots.clear();
  r.visibleGpus.clear();
  r.localGpu = 0;
  if (!adder_.overSsh()) giveGpu(worker, r);
  return addedRankEnvironment(o_, plan_, r, job_, worker, after);
}

RankProcess JobGrowth::forked(int worker, const rendezvous::ElasticIdentity& id, long long after) {
  const std::string& host = plan_.ranks.front().where.host;
  AddedRank rank{worker, rankEnvironment(worker, id, host, after), std::nullopt, std::nullopt};
  std::vector<int> pinned;
  if (auto block = cpuBlock(worker, host)) {
    auto usable = usableCpuTopology();
    auto bindings = usable ? cpuBindings(plan_.bindTo, block->of, *usable)
                           : Result<std::vector<std::vector<int>>>(usable.status());
    if (bindings) {
      pinned = (*bindings)[static_cast<size_t>(block->index)];
    } else {
      printTo(stderr, "hvdrun: warning: rank {} added here runs unpinned: {}\n", worker, bindings.status().message());
    }
  }
  return adder_.forkHere(host, std::move(rank), std::move(pinned));
}

// One new host agent for `workers` on `host` (the ssh launch's, with no stdin rank).
RankProcess JobGrowth::agent(const std::string& host, const std::vector<int>& workers,
                             const std::map<int, rendezvous::ElasticIdentity>& identity, long long after) {
  std::vector<AddedRank> ranks;
  for (int worker : workers) {
    AddedRank rank;
    rank.worker = worker;
    rank.env = rankEnvironment(worker, identity.at(worker), host, after);
    rank.gpuPositions = gpuPositions(worker, host);
    rank.cpuBlock = cpuBlock(worker, host);
    ranks.push_back(std::move(rank));
  }
  return adder_.startAgent(host, isThisMachine(host), std::move(ranks));
}

}  // namespace hvd::cli
