// cli/plan/plan_environment.cc: the environment contract of each rank (docs/environment.md).
#include "cli/plan/json_writer.h"
#include "cli/plan/plan.h"

namespace hvd::cli {
namespace {

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
    return {"CUDA_VISIBLE_DEVICES=" + joined(rank.visibleGpus.empty() ? rank.gpus : rank.visibleGpus),
            "HVD_LOCAL_GPU=" + std::to_string(rank.localGpu)};
  }
  if (rank.hideGpus) return {"CUDA_VISIBLE_DEVICES="};
  return {};
}

std::vector<std::string> withoutGpuVariables(std::vector<std::string> env) {
  std::erase_if(env, [](const std::string& kv) {
    return kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || kv.rfind("HVD_LOCAL_GPU=", 0) == 0;
  });
  return env;
}

std::vector<std::string> planEnvironment(const Plan& plan, const RankPlan& rank) {
  std::vector<std::string> env = rankEnvironment(rank.where);
  for (std::string& kv : env) {
    const std::string name = kv.substr(0, kv.find('='));
    if (name == "TORCHELASTIC_RESTART_COUNT") kv = name + "=" + std::to_string(plan.restartCount);
    if (name == "TORCHELASTIC_MAX_RESTARTS") kv = name + "=" + std::to_string(plan.maxRestarts);
  }
  env.push_back("MASTER_ADDR=" + plan.masterAddr);
  env.push_back("MASTER_PORT=" + std::to_string(plan.masterPort));
  env.push_back("HVD_RENDEZVOUS_ADDR=" + plan.rendezvousAddr);
  env.push_back("HVD_RENDEZVOUS_PORT=" + std::to_string(plan.rendezvousPort));
  for (std::string& kv : gpuVariables(rank)) env.push_back(std::move(kv));
  if (!plan.networkInterface.empty()) {
    env.push_back("HVD_NETWORK_INTERFACE=" + plan.networkInterface);
    env.push_back("NCCL_SOCKET_IFNAME=" + plan.networkInterface);
  }
  if (plan.tfConfig) env.push_back("TF_CONFIG=" + tfConfigJson(plan, rank));
  env.insert(env.end(), plan.runtimeVariables.begin(), plan.runtimeVariables.end());
  return env;
}

}  // namespace hvd::cli
