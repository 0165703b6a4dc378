// cli/launch/launcher_probe.h: can hvdrun start ranks this way on this machine, now?
// Probes run the real tools (`srun --version`, `mpirun --version`) with a short deadline,
// and never run srun without a Slurm configuration: Slurm would then try DNS SRV lookups.
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

struct LauncherProbe {
  std::string name;         // "local", "srun", "mpirun", "ssh"
  bool implemented = true;  // does this hvdrun version launch this way at all
  bool usable = false;      // implemented and the tool works now
  std::string version;      // what the tool reported; empty when it was not run
  std::string reason;       // why not usable; empty when usable
};

// Blocks for at most a few seconds per tool. Reads PATH, SLURM_CONF and SLURM_JOB_ID.
std::vector<LauncherProbe> probeLaunchers();

// Where Slurm's clients would read their configuration from; empty when nowhere, in which
// case running them would fall back to DNS. Reads SLURM_CONF and the standard paths.
std::string slurmConfigPath();

}  // namespace hvd::cli
