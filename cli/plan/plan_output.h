// cli/plan/plan_output.h: the plan as text: a table for people, and the artefacts other
// tools read (JSON, sh exports, an Open MPI hostfile, TF_CONFIG, the mpirun command).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/plan/plan.h"
#include "runtime/common/status.h"

namespace hvd::cli {

enum class PlanFormat { kTable, kJson, kSh, kHostfile, kTfConfig, kMpi };

// "table", "json", "sh", "hostfile", "tf_config", "mpi"; kInvalidArgument lists the choices.
Result<PlanFormat> parsePlanFormat(std::string_view name);

// kInvalidUsage when the format needs what the plan lacks (sh without --rank, tf_config
// without --tf-config) or --rank is out of range. `program` is the user's command.
Result<std::string> renderPlan(const Plan& plan, PlanFormat format, std::optional<int> rank,
                               const std::vector<std::string>& program);

// The Open MPI command line that runs this plan: -np, -H, -bind-to none -map-by slot,
// interface selection, and -x for every variable whose value all ranks share.
std::vector<std::string> mpirunCommand(const Plan& plan, const std::vector<std::string>& program);

// "host:n,..." for the plan's hosts with ranks, in -H syntax, runs of equal counts written
// as hostlists ("gpu[00001-12500]:8") so 100,000 ranks still fit in one variable. The
// srun and mpirun launchers hand it to `hvdrun exec-rank` as HVD_PLAN_HOSTS.
std::string planHostsSpec(const Plan& plan);

}  // namespace hvd::cli
