// cli/launch/slurm_job_query.h: questions hvdrun asks a running Slurm about its own job.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hvd::cli {

// Each node's GPU indices for this job (`scontrol show job -d ID`, 5 s deadline). Empty
// when there is no Slurm configuration (Slurm would query DNS), no scontrol, or no answer:
// planning then falls back to what the environment says.
std::map<std::string, std::vector<std::string>> querySlurmJobGpus(const std::string& jobId);

}  // namespace hvd::cli
