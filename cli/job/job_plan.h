// cli/job/job_plan.h: the plan for a job from its options and what this machine, Slurm
// and (for --nproc-per-node gpu, cpu or auto on -H hosts) the other hosts say. Planning
// itself does no I/O (plan_builder.h); this is where the facts are gathered.
#pragma once

#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "slurm/environment.h"

namespace hvd::cli {

// UserError for a plan that cannot be (naming the option or token), an unreadable hostfile,
// or hosts that cannot be asked.
Plan makePlan(const Options& o, const slurm::Environment& env);

// --tf-port-base, or where TF_CONFIG's ports start when it was not given: ports free on this
// machine when every rank runs here, else a base derived from the job (tf_ports.h).
int chooseTfPortBase(const Options& o, const slurm::Environment& env);

// TensorFlow's servers would fail later, and obscurely, on a taken port: UserError now.
void requireFreeTfPorts(const Plan& plan);

}  // namespace hvd::cli
