// cli/plan/scheduler_hosts.h: the hosts of an allocation made by a scheduler other than
// Slurm, read as mpirun reads them: PBS's node file (PBS Pro, OpenPBS, Torque: one line per
// slot, a host repeated) and LSF's LSB_MCPU_HOSTS ("hostA 4 hostB 2"). Each gives the same
// hosts and slots as the equivalent -H; the ranks start over ssh.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/plan.h"
#include "cli/plan/rank_plan.h"
#include "runtime/common/status.h"
#include "slurm/environment.h"

namespace hvd::cli {

struct SchedulerHosts {
  HostSource source = HostSource::kPbs;
  std::string detail;  // for --dry-run: "PBS job 42.server (PBS_NODEFILE /var/spool/pbs/aux/42)"
  std::vector<HostSlots> hosts;
};

// The allocation the environment describes: PBS_NODEFILE first (its lines in
// `pbsNodefileText`, read by the caller), then LSB_MCPU_HOSTS; nullopt when neither is set.
// Errors name the variable and the token.
Result<std::optional<SchedulerHosts>> schedulerHosts(const slurm::Environment& env, std::string_view pbsNodefileText);

}  // namespace hvd::cli
