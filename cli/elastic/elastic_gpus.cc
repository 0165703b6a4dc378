// cli/elastic/elastic_gpus.cc: a free device, and the list around it.
#include "cli/elastic/elastic_gpus.h"

#include <algorithm>
#include <set>

namespace hvd::cli {

ElasticGpus::ElasticGpus(std::vector<std::string> devices, std::map<int, std::vector<std::string>> own, bool hostList,
                         int perRank)
    : devices_(std::move(devices)), own_(std::move(own)), hostList_(hostList && perRank == 1), perRank_(perRank) {}

std::optional<ElasticGpus::Seen> ElasticGpus::give(int added, const std::vector<int>& localOrder) {
  // Held: the GPUs of the others running here; a worker that ended left its own free.
  std::set<std::string> held;
  for (int worker : localOrder) {
    auto it = own_.find(worker);
    if (worker != added && it != own_.end()) held.insert(it->second.begin(), it->second.end());
  }
  std::vector<std::string> free;
  for (const std::string& d : devices_) {
    if (!held.count(d) && static_cast<int>(free.size()) < perRank_) free.push_back(d);
  }
  if (perRank_ < 1 || static_cast<int>(free.size()) < perRank_) return std::nullopt;
  Seen seen;
  seen.own = own_[added] = free;
  seen.visible = seen.own;
  // The host's list only where every rank here has a GPU to put at its local rank.
  const bool everyOneHas = std::all_of(localOrder.begin(), localOrder.end(), [&](int w) { return own_.count(w) > 0; });
  if (!hostList_ || !everyOneHas) return seen;
  seen.visible.clear();
  for (size_t i = 0; i < localOrder.size(); ++i) {
    seen.visible.push_back(own_.at(localOrder[i]).front());
    if (localOrder[i] == added) seen.localGpu = static_cast<int>(i);
  }
  return seen;
}

}  // namespace hvd::cli
