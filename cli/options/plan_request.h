// cli/options/plan_request.h: the command line's options as a PlanRequest, the one translation
// the launcher and the exec-rank shim share (so both build the same plan).
#pragma once

#include "cli/options/options.h"
#include "cli/plan/plan.h"

namespace hvd::cli {

// Everything but the hostfile's text, which the caller reads (the shim has none).
PlanRequest planRequestFrom(const Options& options);

}  // namespace hvd::cli
