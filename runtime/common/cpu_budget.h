// runtime/common/cpu_budget.h: how many cores this process can actually have. Its CPU
// affinity (taskset, cpusets, Slurm's binding) says where it may run; a cgroup CPU quota
// (docker --cpus, Kubernetes CPU limits, systemd CPUQuota=) says how much of them it gets,
// and sched_getaffinity does not show that: a container limited to 2 CPUs on a 64-core host
// sees 64.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hvd {

// The cores this process can have: its affinity's CPU count, capped by the tightest cgroup
// CPU quota from its own cgroup up to the root (rounded up); at least 1.
int usableCores();
// The same from what a caller has read already: its affinity's CPU count (0: unknown, the
// online CPUs count instead) and cgroupQuotaCores().
int usableCores(size_t affinityCount, std::optional<int> quotaCores);

// The CPUs this process's affinity allows, ascending; empty when it cannot be read. Ranks
// bound to a core each (hvdrun --bind-to core, srun --cpu-bind=cores) see one here, and
// only the host's ranks together say whether they share it (host_board.h).
std::vector<int> affinityCpus();

// The tightest quota in cores (quota / period) over the cgroups of this process, read under
// `root` (a file-system root; "" for the real one), v2 (cpu.max) or v1 (cpu.cfs_quota_us and
// cpu.cfs_period_us); nullopt when none is set or none can be read.
std::optional<double> cgroupCpuQuota(const std::string& root = "");
// That quota in whole cores, rounded up (1.5 -> 2), as usableCores() caps by it.
std::optional<int> cgroupQuotaCores();

// cgroup v2's cpu.max ("150000 100000": 1.5 cores; "max 100000": no limit, nullopt).
std::optional<double> parseCpuMax(std::string_view text);

// The directories whose CPU quota applies to this process, from /proc/self/cgroup's text,
// innermost first, up to the hierarchy's root: for v2 ("0::/a/b") under /sys/fs/cgroup, for v1
// (a line whose controllers include cpu) under /sys/fs/cgroup/<controllers> and
// /sys/fs/cgroup/cpu. A container with its own cgroup namespace sees "/" there.
std::vector<std::string> cgroupCpuDirs(std::string_view procSelfCgroup);

// Tasks runnable on the whole host now (the running count of /proc/loadavg, this thread
// included); nullopt when it cannot be read.
std::optional<int> runnableTasks();
// "0.50 0.40 0.30 3/250 12345" -> 3.
std::optional<int> parseRunnableTasks(std::string_view loadavg);

}  // namespace hvd
