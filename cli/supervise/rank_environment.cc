// cli/supervise/rank_environment.cc: the parts, their order, and laying them over.
#include "cli/supervise/rank_environment.h"

#include <set>

#include "runtime/common/rank_contract.h"

extern char** environ;

namespace hvd::cli {
namespace {

using rank_contract::assignment;

std::string_view nameOf(std::string_view kv) { return kv.substr(0, kv.find('=')); }

}  // namespace

RankEnvironment RankEnvironment::fromPlan(const Plan& plan, const RankPlan& rank) {
  RankEnvironment env;
  env.set(Part::kIdentity, planIdentityVariables(plan, rank));
  env.set(Part::kGpus, gpuVariables(rank));
  env.set(Part::kPlanSettings, planSettingVariables(plan, rank));
  return env;
}

RankEnvironment& RankEnvironment::set(Part part, std::vector<std::string> variables) {
  parts_[static_cast<size_t>(part)] = std::move(variables);
  return *this;
}

RankEnvironment& RankEnvironment::job(const JobVariables& job) {
  return set(Part::kJob, {assignment(rank_contract::kSecretKey, job.secret),
                          assignment(rank_contract::kPreemptFile, job.preemptFile),
                          assignment(rank_contract::kPreemptSignal, job.preemptSignal)});
}

RankEnvironment& RankEnvironment::elastic(const ElasticVariables& elastic) {
  std::vector<std::string> vars{assignment(rank_contract::kElasticWorker, std::to_string(elastic.worker)),
                                assignment(rank_contract::kHorovodElastic, "1")};
  if (elastic.timeoutSeconds > 0) {
    vars.push_back(assignment(rank_contract::kElasticTimeout, std::to_string(elastic.timeoutSeconds)));
  }
  if (elastic.after) vars.push_back(assignment(rank_contract::kElasticAfter, std::to_string(*elastic.after)));
  return set(Part::kElastic, std::move(vars));
}

RankEnvironment& RankEnvironment::threads(std::vector<std::string> variables) {
  return set(Part::kThreads, std::move(variables));
}

RankEnvironment& RankEnvironment::errorFile(const std::string& path) {
  if (path.empty()) return set(Part::kErrorFile, {});
  return set(Part::kErrorFile, {assignment(rank_contract::kTorchErrorFile, path)});
}

RankEnvironment& RankEnvironment::replaceValue(std::string_view name, std::string_view value) {
  for (auto& part : parts_) {
    for (std::string& kv : part) {
      if (rank_contract::assigns(kv, name)) kv = assignment(name, value);
    }
  }
  return *this;
}

std::optional<std::string> RankEnvironment::valueOf(std::string_view name) const {
  std::optional<std::string> value;
  for (const auto& part : parts_) {
    for (const std::string& kv : part) {
      if (rank_contract::assigns(kv, name)) value = kv.substr(name.size() + 1);
    }
  }
  return value;
}

std::vector<std::string> RankEnvironment::variables() const {
  std::vector<std::string> all;
  for (const auto& part : parts_) all.insert(all.end(), part.begin(), part.end());
  return all;
}

std::vector<std::string> RankEnvironment::over(const std::vector<std::string>& inherited) const {
  return overlay(inherited, variables());
}

std::vector<std::string> overlay(const std::vector<std::string>& inherited, std::vector<std::string> own) {
  std::set<std::string_view> names;
  for (const std::string& kv : own) names.insert(nameOf(kv));
  std::vector<std::string> env;
  env.reserve(inherited.size() + own.size());
  for (const std::string& kv : inherited) {
    if (!names.count(nameOf(kv))) env.push_back(kv);
  }
  env.insert(env.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  return env;
}

std::vector<std::string> processEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace hvd::cli
