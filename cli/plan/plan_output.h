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
// interface selection, and -x for every variable whose value all ranks share. `standalone`:
// for a user to run without hvdrun (--format mpi), so without the address of hvdrun's
// rendezvous, which lives only while hvdrun runs: the ranks join through mpirun's PMIx.
std::vector<std::string> mpirunCommand(const Plan& plan, const std::vector<std::string>& program,
                                       bool standalone = false);

// "host:n,..." for the plan's hosts with ranks, in -H syntax, runs of equal counts written
// as hostlists ("gpu[00001-12500]:8") so 100,000 ranks still fit in one variable. The
// srun and mpirun launchers hand it to `hvdrun exec-rank` as HVD_PLAN_HOSTS.
std::string planHostsSpec(const Plan& plan);

// The GPUs of each host with ranks, when known: "*=0,1;node03=0" (the most common list
// once, then the hosts that differ); empty when no host's devices are known. Launchers
// pass it as HVD_PLAN_GPUS because under mpirun a rank's own CUDA_VISIBLE_DEVICES is
// inherited from another step and cannot be trusted.
std::string planGpusSpec(const Plan& plan);

// HVD_PLAN_GPUS read back: the devices of `host`, or nullopt when the spec does not say.
std::optional<std::vector<std::string>> devicesFromGpusSpec(std::string_view spec, std::string_view host);

}  // namespace hvd::cli
