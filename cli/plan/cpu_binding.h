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

// kCoreOverloadAllowed is Open MPI's core:overload-allowed: core binding that deals ranks
// round robin over the cores when they outnumber them, where kCore refuses. Ranks pinned
// two to a core keep those pairs; unpinned, the scheduler sometimes stacks three or four
// of them on one core for a whole run (np=4 on 2 cores beside busy loops, docs/benchmarks.md).
enum class BindTo { kNone, kCore, kCoreOverloadAllowed, kSocket };

// "none", "core", "core:overload-allowed", "socket"; kInvalidArgument naming the value otherwise.
Result<BindTo> parseBindTo(std::string_view text);
std::string_view bindToName(BindTo bind);

// The CPUs of each of localRanks ranks on this host, by local rank; empty lists for kNone.
// kCore: the usable cores (SMT siblings together) split into equal consecutive blocks, one
// per rank (cores / ranks each; the remainder stays unused, as with mpirun's PE=n);
// kInvalidUsage when ranks outnumber cores, naming both. kCoreOverloadAllowed: as kCore while
// the cores suffice, else local rank i gets core i mod cores (as mpirun -map-by slot does).
// kSocket: local rank i gets every usable CPU of socket i mod sockets.
Result<std::vector<std::vector<int>>> cpuBindings(BindTo bind, int localRanks, const std::vector<UsableCpu>& usable);

// "0-3,8" for a CPU list, as taskset and /proc/<pid>/status write it.
std::string cpuListText(const std::vector<int>& cpus);

}  // namespace hvd::cli
