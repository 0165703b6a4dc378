#include "cli/plan/tf_ports.h"

#include <cstdint>
#include <vector>

namespace hvd::cli {

int derivedTfPortBase(std::string_view jobId, unsigned salt, PortRange ephemeral) {
  // FNV-1a over the job id, then the salt: stable, and well spread for consecutive ids.
  uint64_t h = 1469598103934665603ULL;
  for (char c : jobId) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ salt) * 1099511628211ULL;
  constexpr int kFirst = 20000, kEnd = 60000;
  std::vector<int> slots;
  for (int base = kFirst; base + kTfPortsPerNode <= kEnd; base += kTfPortsPerNode) {
    if (base + kTfPortsPerNode - 1 < ephemeral.first || base > ephemeral.last) slots.push_back(base);
  }
  if (slots.empty()) return kFirst + static_cast<int>(h % ((kEnd - kFirst) / kTfPortsPerNode)) * kTfPortsPerNode;
  return slots[h % slots.size()];
}

}  // namespace hvd::cli
