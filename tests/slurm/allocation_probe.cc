// tests/slurm/allocation_probe.cc: run inside a real Slurm job (salloc, sbatch, srun,
// mpirun), prints on one line what hvd::slurm::allocationFromEnvironment made of this
// process's environment, next to facts the test checks it against (the real hostname).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>

#include "slurm/allocation.h"

extern char** environ;

namespace {

template <typename T, typename F>
std::string joined(const std::vector<T>& items, F&& show) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + show(item);
  return out.empty() ? "-" : out;
}

}  // namespace

int main() {
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host);
  auto a = hvd::slurm::allocationFromEnvironment(hvd::slurm::environmentFrom(environ));
  if (!a) {
    std::printf("hostname=%s error=%s\n", host, a.status().message().c_str());
    return 1;
  }
  if (!a->has_value()) {
    std::printf("hostname=%s context=none\n", host);
    return 0;
  }
  const hvd::slurm::Allocation& x = **a;
  std::string line = "hostname=" + std::string(host) + " job=" + x.jobId + " context=" +
                     std::string(hvd::slurm::contextName(x.context)) +
                     " nodes=" + joined(x.nodes, [](const auto& n) { return n.name; }) +
                     " tasks=" + joined(x.nodes, [](const auto& n) { return std::to_string(n.tasks); }) +
                     " node_gpus=" + joined(x.nodes, [](const auto& n) { return std::to_string(n.gpus); }) +
                     " total=" + std::to_string(x.totalTasks);
  if (x.task) {
    line += " source=" + std::string(hvd::slurm::identitySourceName(x.task->source)) +
            " rank=" + std::to_string(x.task->rank) + " size=" + std::to_string(x.task->size) +
            " local=" + std::to_string(x.task->localRank) + " local_size=" + std::to_string(x.task->localSize) +
            " node_index=" + std::to_string(x.task->nodeIndex);
  }
  line += " binding=" + std::string(hvd::slurm::gpuBindingName(x.gpus.binding)) +
          " visible=" + joined(x.gpus.visible, [](const auto& s) { return s; });
  std::printf("%s\n", line.c_str());
  return 0;
}
