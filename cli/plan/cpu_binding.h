// cli/plan/cpu_binding.h: --bind-to, the CPUs each rank on a host is pinned to. Ranks that
// keep their own cores are not moved around by the scheduler under load, nor stacked on one
// core while another idles (what made np=2 collectives bimodal beside busy processes:
// docs/benchmarks.md); mpirun binds to cores by default at np <= 2 for the same reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/os/cpu_topology.h"
#include "runtime/common/status.h"

namespace hvd::cli {

enum class BindTo { kNone, kCore, kSocket };

// "none", "core", "socket"; kInvalidArgument naming the value otherwise.
Result<BindTo> parseBindTo(std::string_view text);
std::string_view bindToName(BindTo bind);

// The CPUs of each of localRanks ranks on this host, by local rank; empty lists for kNone.
// kCore: the usable cores (SMT siblings together) split into equal consecutive blocks, one
// per rank (cores / ranks each; the remainder stays unused, as with mpirun's PE=n);
// kInvalidUsage when ranks outnumber cores, naming both. kSocket: local rank i gets every
// usable CPU of socket i mod sockets.
Result<std::vector<std::vector<int>>> cpuBindings(BindTo bind, int localRanks, const std::vector<UsableCpu>& usable);

// "0-3,8" for a CPU list, as taskset and /proc/<pid>/status write it.
std::string cpuListText(const std::vector<int>& cpus);

}  // namespace hvd::cli
