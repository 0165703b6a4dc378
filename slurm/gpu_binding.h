// slurm/gpu_binding.h: which GPUs this task sees, and whether Slurm already gave it its own
// (srun --gpus-per-task: CUDA_VISIBLE_DEVICES holds only this task's device) or gave every
// task the node's set (--gres=gpu:N, the batch step, mpirun's ranks), so a launcher can pin
// one GPU per local rank without fighting Slurm.
#pragma once

#include <string>
#include <vector>

#include "runtime/common/status.h"
#include "slurm/environment.h"

namespace hvd::slurm {

enum class GpuBinding {
  kNone,     // no GPU information at all
  kPerTask,  // Slurm bound a subset to this task: keep it
  kPerNode,  // the task sees all of its node's GPUs: pick by local rank
};

struct GpuView {
  bool visibleSet = false;           // CUDA_VISIBLE_DEVICES was set (possibly empty)
  std::vector<std::string> visible;  // its entries: indices or UUIDs, in order
  int gpusOnNode = -1;               // SLURM_GPUS_ON_NODE; -1 when unset
  std::vector<std::string> stepGpus;  // SLURM_STEP_GPUS
  std::vector<std::string> jobGpus;   // SLURM_JOB_GPUS (batch step and salloc only)
  int gpusPerTask = -1;               // SLURM_GPUS_PER_TASK
  int gpusPerNode = -1;               // SLURM_GPUS_PER_NODE ("2" or "type:2")
  GpuBinding binding = GpuBinding::kNone;
};

// Reads the GPU variables of this process. kInvalidArgument names a malformed variable.
Result<GpuView> gpuViewFrom(const Environment& env);

// "0,1,3" -> {"0","1","3"}; "" -> {}; entries are trimmed, empty ones rejected.
Result<std::vector<std::string>> parseDeviceList(std::string_view text, std::string_view variable);

std::string_view gpuBindingName(GpuBinding binding);

}  // namespace hvd::slurm
