// cli/options/srun_args.h: --srun-args, more of srun's own options for the step hvdrun runs
// inside a Slurm allocation (containers, GPU and memory binding, --export, --mpi=...). The
// options hvdrun decides itself are refused, each with what to use instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::cli {

// "--container-image=x --gpu-bind=closest" -> its words, split at spaces (as --mpi-args).
// kInvalidUsage naming the first option hvdrun sets itself (the task count, placement,
// labels, stdin, the end of the step).
Result<std::vector<std::string>> parseSrunArgs(std::string_view text);

// Whether the words bind CPUs (--cpu-bind), which --bind-to does too.
bool srunArgsBindCpus(const std::vector<std::string>& words);

}  // namespace hvd::cli
