// cli/elastic/elastic_world.h: an elastic job's world (--min-np). Its workers are the ranks
// hvdrun started, under their first rank numbers for good; each generation of the world is
// the workers still running, ranked in that order. When one fails, the rest go on as the
// next generation while at least the minimum are left. What the ranks read to join each
// generation is in runtime/rendezvous/protocol.h; this class only decides and spells it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

class ElasticWorld {
 public:
  // Worker i (its first rank) runs on hosts[i]. minSize: --min-np; resetLimit: how many
  // times the world may change (-1: no limit).
  ElasticWorld(std::vector<std::string> hosts, int minSize, int resetLimit);

  // What hvdrun publishes at the rendezvous, and the keys a world replaced leaves behind.
  struct Keys {
    std::map<std::string, std::string> values;
    std::string abandonPrefix;  // empty: nothing abandoned
  };
  Keys firstWorld() const;  // generation 0: every worker

  // What a worker's end does to the job. A failure makes the next generation of the ones
  // still running, unless too few are left or the world may not change again: then
  // `goesOn` is false, `why` says which, and the keys tell the ranks still running that there
  // is no next world (kElasticEnded).
  struct Change {
    bool goesOn = false;
    std::string why;  // when it does not go on
    Keys keys;        // a new generation's; or, when it does not go on, the end's
    // A clean end before its world formed: the job's training is done, and these workers,
    // added for that world and never in one that formed, only wait for it: hvdrun stops them
    // (nothing of theirs is lost), and their ends are not failures.
    std::vector<int> stop;
  };
  Change workerFailed(int worker);
  // Workers that failed together (a host lost with its agent): one new generation without
  // them, one change against the reset limit, as Horovod counts a host's loss. Workers not
  // running are passed over.
  Change workersFailed(const std::vector<int>& workers);
  // A worker ended by itself, exit 0: the job's training is done (horovodrun's rule: a
  // worker's success ends the job), so the world grows no more. Once the newest generation
  // formed (every rank of it arrived: `lastFormed`, -1 for none yet), the others are
  // finishing too and nothing else changes. A newer one waits for this worker, which will
  // never come: it ends (the keys and `why`), and `stop` has the workers that only wait for
  // it: the ones added for it and the ones that have arrived there (`waiting`).
  Change workerFinished(int worker, long long lastFormed, const std::set<int>& waiting);

  // Workers hvdrun stops because their hosts left the discovery script's answer: the next
  // generation goes on without them, as after a failure. Where it could not (fewer than the
  // minimum would be left, or the world may not change again) nothing changes: `goesOn` is
  // false and `why` says which; they keep running.
  Change workersRemoved(const std::vector<int>& workers);

  // Workers hvdrun started while the job runs, one on each of `hosts`: the next generation
  // has them after the ones running, numbered from the next worker number. Nothing changes
  // once the job has ended or is finishing, or the world may not change again (resetLimit):
  // `workers` is then empty. A new worker first joins the world after `after`
  // (HVD_ELASTIC_AFTER), as identities[i] (workers[i]'s rank, size, local and cross ranks
  // there, which its launch variables give).
  struct Growth {
    std::vector<int> workers;
    long long after = -1;
    Keys keys;
    std::vector<rendezvous::ElasticIdentity> identities;
  };
  Growth addWorkers(const std::vector<std::string>& hosts);

  int runningOn(const std::string& host) const;  // workers running on `host`
  const std::string& hostOf(int worker) const { return hosts_.at(static_cast<size_t>(worker)); }

  long long generation() const { return generation_; }
  bool ended() const { return ended_; }
  bool finishing() const { return finishing_; }  // a worker finished: no more growth
  int size() const { return static_cast<int>(running_.size()); }
  const std::vector<int>& running() const { return running_; }  // worker numbers, in rank order

 private:
  Keys keysOf(long long generation) const;
  Keys endOf(const std::string& why) const;  // there is no world after the newest
  std::string refusal(size_t left) const;

  std::vector<std::string> hosts_;
  int minSize_;
  int resetLimit_;
  long long generation_ = 0;
  bool ended_ = false;
  bool finishing_ = false;
  std::vector<int> running_;
  std::vector<long long> firstGeneration_;  // each worker's first world
};

}  // namespace hvd::cli
