// cli/launch/elastic_world.h: an elastic job's world (--min-np). Its workers are the ranks
// hvdrun started, under their first rank numbers for good; each generation of the world is
// the workers still running, ranked in that order. When one fails, the rest go on as the
// next generation while at least the minimum are left. What the ranks read to join each
// generation is in runtime/rendezvous/protocol.h; this class only decides and spells it.
#pragma once

#include <map>
#include <string>
#include <vector>

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

  // A worker ended. Clean ends only leave the world (the others are finishing too); a
  // failure makes the next generation of the ones still running, unless too few are left
  // or the world may not change again: then `goesOn` is false, `why` says which, and the
  // keys tell the ranks still running that there is no next world (kElasticEnded).
  struct Change {
    bool goesOn = false;
    std::string why;  // when it does not go on
    Keys keys;        // a new generation's; or, when it does not go on, the end's
  };
  Change workerEnded(int worker, bool failed);

  // Workers hvdrun started while the job runs, one on each of `hosts`: the next generation
  // has them after the ones running, numbered from the next worker number. Nothing changes
  // once the job has ended or the world may not change again (resetLimit): `workers` is
  // then empty. A new worker first joins the world after `after` (HVD_ELASTIC_AFTER).
  struct Growth {
    std::vector<int> workers;
    long long after = -1;
    Keys keys;
  };
  Growth addWorkers(const std::vector<std::string>& hosts);

  int runningOn(const std::string& host) const;  // workers running on `host`

  long long generation() const { return generation_; }
  bool ended() const { return ended_; }
  int size() const { return static_cast<int>(running_.size()); }
  const std::vector<int>& running() const { return running_; }  // worker numbers, in rank order

 private:
  Keys keysOf(long long generation) const;

  std::vector<std::string> hosts_;
  int minSize_;
  int resetLimit_;
  long long generation_ = 0;
  bool ended_ = false;
  std::vector<int> running_;
};

}  // namespace hvd::cli
