// cli/os/cpu_topology.h: which CPUs this process may use, and how they group into cores
// (SMT siblings) and sockets, as sysfs tells it. For --bind-to (cli/plan/cpu_binding.h).
#pragma once

#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::cli {

struct UsableCpu {
  int cpu = 0;
  int core = 0;    // topology/core_id: equal for SMT siblings of one package
  int socket = 0;  // topology/physical_package_id
};

// This process's affinity (sched_getaffinity: taskset, cgroup cpusets, Slurm's binding), in
// CPU order, each with its core and socket read under sysRoot ("/sys" on a real machine; a
// test's fake tree otherwise). A CPU whose topology files are missing is a core and socket
// of its own (0). kSystem when the affinity cannot be read.
Result<std::vector<UsableCpu>> usableCpuTopology(const std::string& sysRoot = "/sys");

// The same for a given CPU list (tests).
std::vector<UsableCpu> cpuTopology(const std::vector<int>& cpus, const std::string& sysRoot);

}  // namespace hvd::cli
