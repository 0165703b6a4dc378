// cli/elastic/elastic_world.cc: the generations, and each worker's identity in them.
#include "cli/elastic/elastic_world.h"

#include <algorithm>

#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

ElasticWorld::ElasticWorld(std::vector<std::string> hosts, int minSize, int resetLimit)
    : hosts_(std::move(hosts)), minSize_(minSize), resetLimit_(resetLimit) {
  for (int w = 0; w < static_cast<int>(hosts_.size()); ++w) running_.push_back(w);
  firstGeneration_.assign(hosts_.size(), 0);
}

ElasticWorld::Keys ElasticWorld::firstWorld() const { return keysOf(0); }

// Ranks follow the workers' first ranks; hosts are numbered in order of their lowest rank,
// and local ranks count the ranks before on the same host (as hvdrun plans a job).
ElasticWorld::Keys ElasticWorld::keysOf(long long generation) const {
  Keys keys;
  std::vector<std::string> hostOrder;
  for (int w : running_) {
    const std::string& host = hosts_[static_cast<size_t>(w)];
    if (std::find(hostOrder.begin(), hostOrder.end(), host) == hostOrder.end()) hostOrder.push_back(host);
  }
  const int size = static_cast<int>(running_.size());
  for (int rank = 0; rank < size; ++rank) {
    const std::string& host = hosts_[static_cast<size_t>(running_[static_cast<size_t>(rank)])];
    rendezvous::ElasticIdentity id;
    id.rank = rank;
    id.size = size;
    id.crossSize = static_cast<int>(hostOrder.size());
    id.crossRank = static_cast<int>(std::find(hostOrder.begin(), hostOrder.end(), host) - hostOrder.begin());
    id.localRank = id.localSize = 0;
    for (int other = 0; other < size; ++other) {
      if (hosts_[static_cast<size_t>(running_[static_cast<size_t>(other)])] != host) continue;
      id.localRank += other < rank ? 1 : 0;
      ++id.localSize;
    }
    keys.values[rendezvous::elasticIdentityKey(generation, running_[static_cast<size_t>(rank)])] =
        rendezvous::formatElasticIdentity(id);
  }
  // Last in meaning, though published with the rest in one step: the pointer to this one.
  keys.values[rendezvous::elasticNextKey(generation - 1)] = std::to_string(generation);
  if (generation > 0) keys.abandonPrefix = rendezvous::elasticJoinPrefix(generation - 1);
  return keys;
}

ElasticWorld::Keys ElasticWorld::endOf(const std::string& why) const {
  Keys keys;
  keys.values[rendezvous::elasticNextKey(generation_)] = std::string(rendezvous::kElasticEnded) + why;
  keys.abandonPrefix = rendezvous::elasticJoinPrefix(generation_);
  return keys;
}

// Why the world may not become one of `left` workers (empty: it may).
std::string ElasticWorld::refusal(size_t left) const {
  if (static_cast<int>(left) < minSize_) {
    return "only " + std::to_string(left) + " rank(s) would be left, fewer than --min-np " + std::to_string(minSize_);
  }
  if (resetLimit_ >= 0 && generation_ >= resetLimit_) {
    return "the world has changed " + std::to_string(generation_) + " time(s) already (--reset-limit " +
           std::to_string(resetLimit_) + ")";
  }
  return "";
}

ElasticWorld::Change ElasticWorld::workerFailed(int worker) { return workersFailed({worker}); }

ElasticWorld::Change ElasticWorld::workersFailed(const std::vector<int>& workers) {
  Change change;
  if (ended_) return change;
  bool any = false;
  for (int worker : workers) {
    auto it = std::find(running_.begin(), running_.end(), worker);
    if (it == running_.end()) continue;  // gone already: nothing changes for it
    running_.erase(it);
    any = true;
  }
  if (!any) return change;  // nothing changes, and nothing goes on
  change.why = refusal(running_.size());
  if (!change.why.empty()) {
    ended_ = true;
    change.keys = endOf(change.why);
    return change;
  }
  change.goesOn = true;
  change.keys = keysOf(++generation_);
  return change;
}

ElasticWorld::Change ElasticWorld::workersRemoved(const std::vector<int>& workers) {
  Change change;
  if (ended_ || finishing_ || workers.empty()) return change;
  std::vector<int> left = running_;
  for (int worker : workers) {
    auto it = std::find(left.begin(), left.end(), worker);
    if (it == left.end()) return change;  // not running: nothing to remove
    left.erase(it);
  }
  change.why = refusal(left.size());
  if (!change.why.empty()) return change;
  running_ = std::move(left);
  change.goesOn = true;
  change.keys = keysOf(++generation_);
  return change;
}

ElasticWorld::Change ElasticWorld::workerFinished(int worker, long long lastFormed, const std::set<int>& waiting) {
  Change change;
  auto it = std::find(running_.begin(), running_.end(), worker);
  if (ended_ || it == running_.end()) return change;
  running_.erase(it);
  finishing_ = true;
  if (lastFormed >= generation_) {
    change.goesOn = true;
    return change;
  }
  ended_ = true;
  if (lastFormed < 0) {
    // No world formed yet: nobody trained, and the ranks waiting for the first one fail at
    // once saying why (this worker never joined: a program that ends before hvd.init()).
    change.why = "rank " + std::to_string(worker) + " ended (exit 0) without joining the job's first world";
  } else {
    change.why = "rank " + std::to_string(worker) + " finished (exit 0) before the job's world " +
                 std::to_string(generation_) + " formed";
    for (int w : running_) {
      if (firstGeneration_[static_cast<size_t>(w)] > lastFormed || waiting.count(w)) change.stop.push_back(w);
    }
  }
  change.keys = endOf(change.why);
  return change;
}

int ElasticWorld::runningOn(const std::string& host) const {
  return static_cast<int>(std::count_if(running_.begin(), running_.end(),
                                        [&](int w) { return hosts_[static_cast<size_t>(w)] == host; }));
}

ElasticWorld::Growth ElasticWorld::addWorkers(const std::vector<std::string>& hosts) {
  Growth growth;
  if (ended_ || finishing_ || hosts.empty() || (resetLimit_ >= 0 && generation_ >= resetLimit_)) return growth;
  growth.after = generation_;
  for (const std::string& host : hosts) {
    growth.workers.push_back(static_cast<int>(hosts_.size()));
    running_.push_back(static_cast<int>(hosts_.size()));
    hosts_.push_back(host);
    firstGeneration_.push_back(generation_ + 1);
  }
  growth.keys = keysOf(++generation_);
  for (int worker : growth.workers) {
    growth.identities.push_back(
        *rendezvous::parseElasticIdentity(growth.keys.values.at(rendezvous::elasticIdentityKey(generation_, worker))));
  }
  return growth;
}

}  // namespace hvd::cli
