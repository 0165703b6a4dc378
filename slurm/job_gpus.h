// slurm/job_gpus.h: each node's GPU indices from `scontrol show job -d` ("Nodes=node[02-03]
// CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)"), the one place an allocation's shell can learn
// what --gres=gpu:N gave every node (its environment says nothing about it).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::slurm {

// node -> GPU indices, for every node of the detail lines; a node without GPUs maps to an
// empty list. kInvalidArgument quotes a malformed Nodes= or GRES= field.
Result<std::map<std::string, std::vector<std::string>>> parseJobGpus(std::string_view detail);

}  // namespace hvd::slurm
