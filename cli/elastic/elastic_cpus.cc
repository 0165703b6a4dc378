// cli/elastic/elastic_cpus.cc: a free block, or the least held where sharing is allowed.
#include "cli/elastic/elastic_cpus.h"

namespace hvd::cli {

ElasticCpuBlocks::ElasticCpuBlocks(BindTo bind, int blocks, std::map<int, int> own)
    : bind_(bind), blocks_(blocks), own_(std::move(own)) {}

std::optional<int> ElasticCpuBlocks::give(int added, const std::vector<int>& localOrder) {
  if (bind_ == BindTo::kNone || blocks_ < 1) return std::nullopt;
  std::vector<int> holders(static_cast<size_t>(blocks_), 0);
  for (int worker : localOrder) {
    auto it = own_.find(worker);
    if (worker != added && it != own_.end() && it->second >= 0 && it->second < blocks_) {
      ++holders[static_cast<size_t>(it->second)];
    }
  }
  int chosen = 0;
  for (int b = 1; b < blocks_; ++b) {
    if (holders[static_cast<size_t>(b)] < holders[static_cast<size_t>(chosen)]) chosen = b;
  }
  if (holders[static_cast<size_t>(chosen)] > 0 && bind_ == BindTo::kCore) return std::nullopt;
  own_[added] = chosen;
  return chosen;
}

}  // namespace hvd::cli
