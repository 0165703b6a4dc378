// cli/launch/slurm_job_query.cc: scontrol show job -d, parsed by slurm/job_gpus.
#include "cli/launch/slurm_job_query.h"

#include <cstdlib>

#include "cli/launch/launcher_probe.h"
#include "cli/os/subprocess.h"
#include "slurm/job_gpus.h"

namespace hvd::cli {

std::map<std::string, std::vector<std::string>> querySlurmJobGpus(const std::string& jobId) {
  if (slurmConfigPath().empty()) return {};
  auto scontrol = findExecutable("scontrol", searchPath());
  if (!scontrol) return {};
  auto run = runAndCapture({*scontrol, "show", "job", "-d", jobId});
  if (!run || !run->succeeded()) return {};
  auto gpus = slurm::parseJobGpus(run->out);
  return gpus ? std::move(*gpus) : std::map<std::string, std::vector<std::string>>{};
}

}  // namespace hvd::cli
