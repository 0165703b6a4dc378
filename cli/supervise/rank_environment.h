// cli/supervise/rank_environment.h: the one builder of the variables hvdrun gives a rank,
// used by every path that starts one (hvdrun forking it, a rank an elastic job adds, a host
// agent over ssh, the task shim under srun and mpirun), so each rank gets the same
// variables in the same order whoever starts it. They come in parts, each set where it is
// known: the plan's (identity, GPUs, settings) by whoever holds the plan, the job's secret
// and preemption notice by hvdrun, the threads and torch's error file on the rank's own
// host (a host agent knows its host's CPUs and GPUs, hvdrun does not). over() lays them over
// the environment the rank inherits. Names come from runtime/common/rank_contract.h.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/plan.h"

namespace hvd::cli {

// The job's part: the same for every rank of one start.
struct JobVariables {
  std::string secret;         // HVD_SECRET_KEY: admits a rank to the rendezvous and its peers
  std::string preemptFile;    // HVD_PREEMPT_FILE: created when the preemption notice arrives
  std::string preemptSignal;  // HVD_PREEMPT_SIGNAL: USR1 or USR2
};

// An elastic job's part (--min-np): the worker a rank is (its first rank), how long its
// init() waits for a world, and for a rank added to a running job, the world it joins after.
struct ElasticVariables {
  int worker = 0;
  int timeoutSeconds = 0;  // 0: not given (the runtime's default)
  std::optional<long long> after;
};

class RankEnvironment {
 public:
  // In this order in every rank's environment.
  enum class Part : size_t { kIdentity, kGpus, kPlanSettings, kJob, kElastic, kThreads, kErrorFile };
  static constexpr size_t kParts = 7;

  RankEnvironment() = default;
  // The plan's parts of `rank`: identity, GPUs, settings (planEnvironment's variables).
  static RankEnvironment fromPlan(const Plan& plan, const RankPlan& rank);

  // Each replaces its part whole.
  RankEnvironment& set(Part part, std::vector<std::string> variables);
  RankEnvironment& job(const JobVariables& job);
  RankEnvironment& elastic(const ElasticVariables& elastic);
  RankEnvironment& threads(std::vector<std::string> variables);
  RankEnvironment& errorFile(const std::string& path);  // TORCHELASTIC_ERROR_FILE; empty: none

  // A value decided elsewhere for a variable of the plan's (a launcher's MASTER_PORT, which a
  // task shim's own plan cannot know): the variable keeps its place with this value.
  RankEnvironment& replaceValue(std::string_view name, std::string_view value);

  const std::vector<std::string>& part(Part part) const { return parts_[static_cast<size_t>(part)]; }
  // The value of a variable set in any part; nullopt when none sets it.
  std::optional<std::string> valueOf(std::string_view name) const;

  // Every variable, part by part in the order above.
  std::vector<std::string> variables() const;
  // The rank's complete environment: `inherited` ("NAME=value") without the variables set
  // here, then these.
  std::vector<std::string> over(const std::vector<std::string>& inherited) const;

  bool operator==(const RankEnvironment&) const = default;

 private:
  std::array<std::vector<std::string>, kParts> parts_;
};

// This process's environment, "NAME=value".
std::vector<std::string> processEnvironment();

// `inherited` without the variables `variables` set, then `variables` ("NAME=value" each).
std::vector<std::string> overlay(const std::vector<std::string>& inherited, std::vector<std::string> variables);

}  // namespace hvd::cli
