// cli/plan/plan_environment.cc: the environment contract of each rank (docs/environment.md).
#include "cli/plan/json_writer.h"
#include "cli/plan/plan.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

using rank_contract::assignment;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

std::string tfConfigJson(const Plan& plan, const RankPlan& rank) {
  // The cluster holds chief, worker and ps (never the evaluator), each in rank order.
  JsonWriter w;
  w.beginObject().key("cluster").beginObject();
  for (Role role : {Role::kChief, Role::kWorker, Role::kPs}) {
    bool any = false;
    for (const RankPlan& r : plan.ranks) any |= r.role == role;
    if (!any) continue;
    w.key(roleName(role)).beginArray();
    for (const RankPlan& r : plan.ranks) {
      if (r.role == role) w.value(r.where.host + ":" + std::to_string(r.tfPort));
    }
    w.endArray();
  }
  w.endObject();
  w.key("task").beginObject().key("type").value(roleName(rank.role)).key("index").value(rank.roleIndex).endObject();
  w.endObject();
  return w.str();
}

std::optional<int> parameterServerChief(const Plan& plan) {
  if (!plan.tfConfig) return std::nullopt;
  std::optional<int> chief;
  bool anyPs = false;
  for (const RankPlan& r : plan.ranks) {
    if (r.role == Role::kChief) chief = r.where.rank;
    anyPs |= r.role == Role::kPs;
  }
  return anyPs ? chief : std::nullopt;
}

std::vector<std::string> gpuVariables(const RankPlan& rank) {
  if (!rank.gpus.empty()) {
    return {assignment(rank_contract::kCudaVisibleDevices, joined(rank.visibleGpus.empty() ? rank.gpus : rank.visibleGpus)),
            assignment(rank_contract::kLocalGpu, std::to_string(rank.localGpu))};
  }
  if (rank.hideGpus) return {assignment(rank_contract::kCudaVisibleDevices, "")};
  return {};
}

std::vector<std::string> withoutGpuVariables(std::vector<std::string> env) {
  std::erase_if(env, [](const std::string& kv) {
    return rank_contract::assigns(kv, rank_contract::kCudaVisibleDevices) ||
           rank_contract::assigns(kv, rank_contract::kLocalGpu);
  });
  return env;
}

std::vector<std::string> planIdentityVariables(const Plan& plan, const RankPlan& rank) {
  std::vector<std::string> env = rankEnvironment(rank.where);
  for (std::string& kv : env) {
    if (rank_contract::assigns(kv, rank_contract::kTorchRestartCount)) {
      kv = assignment(rank_contract::kTorchRestartCount, std::to_string(plan.restartCount));
    }
    if (rank_contract::assigns(kv, rank_contract::kTorchMaxRestarts)) {
      kv = assignment(rank_contract::kTorchMaxRestarts, std::to_string(plan.maxRestarts));
    }
  }
  env.push_back(assignment(rank_contract::kMasterAddr, plan.masterAddr));
  env.push_back(assignment(rank_contract::kMasterPort, std::to_string(plan.masterPort)));
  env.push_back(assignment(rank_contract::kRendezvousAddr, plan.rendezvousAddr));
  env.push_back(assignment(rank_contract::kRendezvousPort, std::to_string(plan.rendezvousPort)));
  return env;
}

std::vector<std::string> planSettingVariables(const Plan& plan, const RankPlan& rank) {
  std::vector<std::string> env;
  if (!plan.networkInterface.empty()) {
    env.push_back(assignment(rank_contract::kNetworkInterface, plan.networkInterface));
    env.push_back(assignment(rank_contract::kNcclSocketIfname, plan.networkInterface));
  }
  if (plan.tfConfig) env.push_back(assignment(rank_contract::kTfConfig, tfConfigJson(plan, rank)));
  env.insert(env.end(), plan.runtimeVariables.begin(), plan.runtimeVariables.end());
  return env;
}

std::vector<std::string> planEnvironment(const Plan& plan, const RankPlan& rank) {
  std::vector<std::string> env = planIdentityVariables(plan, rank);
  for (std::string& kv : gpuVariables(rank)) env.push_back(std::move(kv));
  for (std::string& kv : planSettingVariables(plan, rank)) env.push_back(std::move(kv));
  return env;
}

}  // namespace hvd::cli
