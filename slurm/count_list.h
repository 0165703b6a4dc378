// slurm/count_list.h: Slurm's run-length lists of per-node counts, as in
// SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE:
// "2(x3),1" means 2, 2, 2, 1.
#pragma once

#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::slurm {

// Expands the list. `variable` names the source in errors, which quote the offending item
// and its 1-based position. Counts must be >= minimum; repeats (xN) must be >= 1. At most
// `maxEntries` counts in total, so "1(x999999999999)" cannot exhaust memory.
Result<std::vector<int>> parseCountList(std::string_view text, std::string_view variable, int minimum = 1,
                                        size_t maxEntries = 1 << 22);

// Checks a parsed list against the node count, e.g. SLURM_TASKS_PER_NODE against the
// nodes of SLURM_JOB_NODELIST, with a message naming both variables.
Status checkCountMatchesNodes(const std::vector<int>& counts, std::string_view variable, size_t nodes,
                              std::string_view nodesVariable);

}  // namespace hvd::slurm
