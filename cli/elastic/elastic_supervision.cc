// cli/elastic/elastic_supervision.cc: the world's decisions as ranks end, and what hvdrun says.
#include "cli/elastic/elastic_supervision.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cli/elastic/rank_timeout.h"
#include "cli/os/console.h"
#include "cli/supervise/rank_failure.h"
#include "cli/user_error.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

// The newest of an elastic job's worlds whose ranks all arrived (-1: none yet).
long long lastFormedWorld(const RendezvousServer& server, long long newest) {
  for (long long g = newest; g >= 0; --g) {
    if (server.value(rendezvous::elasticFormedKey(g))) return g;
  }
  return -1;
}

// The workers waiting in world `generation` (they arrived there).
std::set<int> waitingIn(const RendezvousServer& server, const ElasticWorld& world, long long generation) {
  std::set<int> waiting;
  for (int w : world.running()) {
    if (server.value(rendezvous::elasticArrivedKey(generation, w))) waiting.insert(w);
  }
  return waiting;
}

}  // namespace

std::optional<ElasticVariables> elasticVariables(const Options& o, int worker) {
  if (o.minNp == 0) return std::nullopt;
  return ElasticVariables{worker, o.elasticTimeout, std::nullopt};
}

std::chrono::milliseconds ranksTimeout(const Options& o) {
  return rankTimeout([&o](const char* name) -> const char* {
    const std::string prefix = std::string(name) + "=";
    const char* given = nullptr;
    for (const std::string& kv : o.runtimeVariables) {
      if (kv.rfind(prefix, 0) == 0) given = kv.c_str() + prefix.size();
    }
    return given != nullptr ? given : std::getenv(name);
  });
}

SupervisorOptions::AfterRankEnd elasticRankEnded(const Options& o, ElasticWorld& world, RendezvousServer& server,
                                                 const std::vector<int>& ranks, const RankFailure* failure,
                                                 bool canStop) {
  const int rank = ranks.front();
  if (failure == nullptr) {
    const long long newest = world.generation();
    auto change = world.workerFinished(rank, lastFormedWorld(server, newest), waitingIn(server, world, newest));
    auto publish = [&server, keys = change.keys, why = "the elastic job ended: " + change.why] {
      if (!keys.values.empty()) server.publish(keys.values, keys.abandonPrefix, why);
    };
    if (change.stop.empty() || !canStop) {
      publish();
      return {.goesOn = change.goesOn};
    }
    printTo(stderr, "hvdrun: {}, so the job's training is done: stopping rank(s) {}, which were waiting for that "
                    "world\n", change.why, rankListText(change.stop, 32));
    return {change.goesOn, change.stop, publish};
  }
  // Several ended together only with their host agent: one new world without them, one line.
  auto change = world.workersFailed(ranks);
  const bool one = ranks.size() == 1;
  const std::string who = (one ? "rank " : "ranks ") + rankListText(ranks, 32);
  // A host agent's end stands for its ranks': the host (or the connection to it) was lost.
  const std::string how = failure->launcherProcess ? fmt::format("{} lost with host {} (its agent {})",
                                                                 one ? "was" : "were", failure->host, endText(*failure))
                                                   : endText(*failure);
  if (!change.goesOn) {
    if (!change.why.empty()) {
      printTo(stderr, "hvdrun: {} {}, and the elastic job cannot go on without {}: {}\n", who, how, one ? "it" : "them",
              change.why);
      server.publish(change.keys.values, change.keys.abandonPrefix, "the elastic job ended: " + change.why);
    }
    return {};
  }
  server.publish(change.keys.values, change.keys.abandonPrefix,
                 fmt::format("the job's world changed while this rank joined it ({} {})", who, how));
  printTo(stderr, "hvdrun: {} {}; the other {} rank(s) go on without {} as the job's world {} (--min-np {}), "
                  "numbered 0-{} in the order of their first ranks\n",
          who, how, world.size(), one ? "it" : "them", world.generation(), o.minNp, world.size() - 1);
  return {.goesOn = true};
}

void ElasticSupervision::start(const Options& o, const Plan& plan, const JobVariables& job, RendezvousServer* server,
                               SupervisorOptions& supervision, RankAdder* adder) {
  if (o.minNp == 0 || server == nullptr) return;
  // The first world is published before any rank starts, and the supervisor asks the world
  // whether the job goes on each time a rank ends; a rank frozen as long as its peers wait
  // in a collective (HVD_TIMEOUT) fails.
  std::vector<std::string> hosts;
  for (const RankPlan& r : plan.ranks) hosts.push_back(r.where.host);
  world_.emplace(std::move(hosts), o.minNp, o.resetLimit);
  auto first = world_->firstWorld();
  server->publish(first.values, first.abandonPrefix, "");
  supervision.rankEnded = [&o, this, server](const std::vector<int>& ranks, const RankFailure* failure) {
    return elasticRankEnded(o, *world_, *server, ranks, failure, true);
  };
  supervision.frozenFails = ranksTimeout(o);
  if (o.hostDiscoveryScript.empty() || adder == nullptr) return;
  auto started = HostDiscovery::start(o.hostDiscoveryScript, o.slotsPerHost, std::chrono::seconds(1));
  if (!started) throw UserError(ExitCode::kEnvironment, started.status().message(), started.status().hint());
  discovery_ = std::move(*started);
  growth_.emplace(o, plan, job, *world_, *server, *discovery_, *adder);
  growth_->discoveredSlots();  // the hosts of the answer before the launch count as listed
  // A launch host the script does not name (-H node01 where it says node01.cluster) is never
  // grown or shrunk, and would be taken for another host if named later.
  std::map<std::string, std::vector<int>> unnamed;
  for (const RankPlan& r : plan.ranks) {
    if (!growth_->listed(r.where.host)) unnamed[r.where.host].push_back(r.where.rank);
  }
  for (const auto& [host, ranks] : unnamed) {
    printTo(stderr, "hvdrun: warning: the host discovery script does not name {}, where rank(s) {} start: hvdrun "
                    "neither adds ranks there nor stops them when the script's answer changes (name it as the "
                    "script does, in -H or the hostfile)\n", host, rankListText(ranks, 32));
  }
  supervision.changeRanks = [this] {
    SupervisorOptions::RankChanges changes;
    changes.stop = growth_->fewer();
    if (changes.stop.empty()) changes.start = growth_->more();
    return changes;
  };
  supervision.rankEnded = [this, ended = supervision.rankEnded](const std::vector<int>& ranks,
                                                                const RankFailure* failure) {
    if (failure != nullptr) growth_->rankFailed(failure->host);
    return ended(ranks, failure);
  };
}

}  // namespace hvd::cli
