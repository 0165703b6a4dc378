// cli/os/cpu_topology.cc: sysfs's CPU topology for the CPUs this process may use.
#include "cli/os/cpu_topology.h"

#include <sched.h>

#include <cstdlib>
#include <fstream>

namespace hvd::cli {

namespace {

int readNumber(const std::string& path) {
  std::ifstream in(path);
  int value = 0;
  if (!(in >> value)) return 0;
  return value;
}

}  // namespace

std::vector<UsableCpu> cpuTopology(const std::vector<int>& cpus, const std::string& sysRoot) {
  std::vector<UsableCpu> out;
  for (int cpu : cpus) {
    std::string dir = sysRoot + "/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    out.push_back({cpu, readNumber(dir + "core_id"), readNumber(dir + "physical_package_id")});
  }
  return out;
}

Result<std::vector<UsableCpu>> usableCpuTopology(const std::string& sysRoot) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return systemError("sched_getaffinity");
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpuTopology(cpus, sysRoot);
}

}  // namespace hvd::cli
