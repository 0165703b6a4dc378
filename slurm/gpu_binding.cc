// slurm/gpu_binding.cc: GPU variables to a GpuView.
#include "slurm/gpu_binding.h"

#include <charconv>

namespace hvd::slurm {
namespace {

Result<int> parseCount(std::string_view text, std::string_view variable) {
  // SLURM_GPUS_PER_NODE may carry a type: "a100:2"; the count is after the last ':'.
  std::string_view digits = text.substr(text.rfind(':') == std::string_view::npos ? 0 : text.rfind(':') + 1);
  int value = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value < 0) {
    return invalidArgument(std::string(variable) + "='" + std::string(text) + "' is not a GPU count");
  }
  return value;
}

}  // namespace

std::string_view gpuBindingName(GpuBinding binding) {
  switch (binding) {
    case GpuBinding::kNone: return "none";
    case GpuBinding::kPerTask: return "per-task";
    case GpuBinding::kPerNode: return "per-node";
  }
  return "none";
}

Result<std::vector<std::string>> parseDeviceList(std::string_view text, std::string_view variable) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) {
      return invalidArgument(std::string(variable) + "='" + std::string(text) + "' has an empty entry at position " +
                             std::to_string(start + 1));
    }
    out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<GpuView> gpuViewFrom(const Environment& env) {
  GpuView view;
  if (auto v = lookup(env, "CUDA_VISIBLE_DEVICES")) {
    view.visibleSet = true;
    auto list = parseDeviceList(*v, "CUDA_VISIBLE_DEVICES");
    if (!list) return list.status();
    view.visible = std::move(*list);
  }
  if (auto v = lookup(env, "SLURM_GPUS_ON_NODE")) {
    auto n = parseCount(*v, "SLURM_GPUS_ON_NODE");
    if (!n) return n.status();
    view.gpusOnNode = *n;
  }
  if (auto v = lookup(env, "SLURM_GPUS_PER_TASK")) {
    auto n = parseCount(*v, "SLURM_GPUS_PER_TASK");
    if (!n) return n.status();
    view.gpusPerTask = *n;
  }
  if (auto v = lookup(env, "SLURM_GPUS_PER_NODE")) {
    auto n = parseCount(*v, "SLURM_GPUS_PER_NODE");
    if (!n) return n.status();
    view.gpusPerNode = *n;
  }
  for (auto [name, target] : {std::pair{"SLURM_STEP_GPUS", &view.stepGpus}, std::pair{"SLURM_JOB_GPUS", &view.jobGpus}}) {
    if (auto v = lookup(env, name)) {
      auto list = parseDeviceList(*v, name);
      if (!list) return list.status();
      *target = std::move(*list);
    }
  }

  // Per task when the task sees fewer devices than its node has: that is what srun's
  // --gpus-per-task (or --gpu-bind) does. Seeing all of them, or having no node count to
  // compare with, means the launcher must choose.
  if (!view.visibleSet && view.gpusOnNode <= 0 && view.stepGpus.empty() && view.jobGpus.empty()) {
    view.binding = GpuBinding::kNone;
  } else if (view.visibleSet && view.gpusOnNode > 0 && static_cast<int>(view.visible.size()) < view.gpusOnNode) {
    view.binding = GpuBinding::kPerTask;
  } else {
    view.binding = GpuBinding::kPerNode;
  }
  return view;
}

}  // namespace hvd::slurm
