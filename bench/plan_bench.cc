// bench/plan_bench.cc: planning a large job from a Slurm environment: 100,000 ranks on
// 12,500 nodes with 8 GPUs each. Prints medians; asserts nothing. The target is
// "well under a second".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "cli/plan/plan.h"
#include "cli/plan/plan_output.h"

namespace {

double medianMs(int repeat, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  hvd::slurm::Environment env = {{"SLURM_JOB_ID", "123456"},
                                 {"SLURM_JOB_NODELIST", "gpu[00001-12500]"},
                                 {"SLURM_TASKS_PER_NODE", "8(x12500)"},
                                 {"SLURM_JOB_CPUS_PER_NODE", "64(x12500)"},
                                 {"SLURM_GPUS_PER_NODE", "h200:8"},
                                 {"SLURM_NTASKS", "100000"}};
  hvd::cli::PlanRequest request;
  hvd::cli::MachineFacts facts;
  facts.hostname = "login1";
  const int repeat = 7;
  size_t ranks = 0;
  double plan = medianMs(repeat, [&] {
    auto p = hvd::cli::buildPlan(request, env, facts);
    ranks = p->ranks.size();
  });
  auto p = *hvd::cli::buildPlan(request, env, facts);
  size_t vars = 0;
  double environments = medianMs(repeat, [&] {
    vars = 0;
    for (const auto& r : p.ranks) vars += hvd::cli::planEnvironment(p, r).size();
  });
  size_t bytes = 0;
  double json = medianMs(repeat, [&] { bytes = hvd::cli::renderPlan(p, hvd::cli::PlanFormat::kJson, {}, {})->size(); });
  std::printf("plan: %zu ranks on 12500 nodes (8 GPUs each), median of %d runs\n", ranks, repeat);
  std::printf("%-44s %10.1f ms\n", "build the plan from the Slurm environment", plan);
  std::printf("%-44s %10.1f ms  (%zu variables)\n", "every rank's environment", environments, vars);
  std::printf("%-44s %10.1f ms  (%.1f MB)\n", "--format json", json, static_cast<double>(bytes) / 1e6);
  return 0;
}
