// cli/elastic/elastic_cpus.h: the CPUs of a rank an elastic job adds under --bind-to. The
// plan split each host's usable cores into one block per rank it put there (cpuBindings,
// by local rank); an added rank takes a block no running rank there holds (one that left
// freed its own). With none free, --bind-to core leaves it unpinned (it may not share a
// core), while core:overload-allowed and socket, which share, give it the block fewest
// running ranks hold. Blocks are numbers, so hvdrun chooses them for a host whose cores
// only its agent knows (the agent maps the number to its cores). Supervisor's thread only.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "cli/plan/cpu_binding.h"

namespace hvd::cli {

class ElasticCpuBlocks {
 public:
  // blocks: how many the host's cores were split into (its ranks in the plan); own: the
  // block each of the plan's workers there holds.
  ElasticCpuBlocks(BindTo bind, int blocks, std::map<int, int> own);

  // Worker `added`, one of the host's workers in `localOrder` (itself included): its block,
  // or nullopt where it runs unpinned.
  std::optional<int> give(int added, const std::vector<int>& localOrder);
  int blocks() const { return blocks_; }

 private:
  BindTo bind_;
  int blocks_;
  std::map<int, int> own_;
};

}  // namespace hvd::cli
