#include "cli/plan/thread_defaults.h"

#include <algorithm>

namespace hvd::cli {

int defaultThreadsPerRank(int usableCpus, int ranksSharingThem, std::optional<int> cpusPerTask) {
  if (cpusPerTask && *cpusPerTask > 0) return *cpusPerTask;
  return std::max(1, usableCpus / std::max(1, ranksSharingThem));
}

std::vector<std::string> threadVariables(int threads, const std::function<bool(const std::string&)>& userSet) {
  std::vector<std::string> vars;
  if (userSet("OMP_NUM_THREADS")) return vars;
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (!userSet(name)) vars.push_back(std::string(name) + "=" + std::to_string(threads));
  }
  return vars;
}

std::optional<std::string> interOpThreadsVariable(int rankCpus, const std::function<bool(const std::string&)>& userSet) {
  if (rankCpus != 1 || userSet("TF_NUM_INTEROP_THREADS")) return std::nullopt;
  return "TF_NUM_INTEROP_THREADS=2";
}

}  // namespace hvd::cli
