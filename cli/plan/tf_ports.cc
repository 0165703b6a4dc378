#include "cli/plan/tf_ports.h"

#include <cstdint>

namespace hvd::cli {

int derivedTfPortBase(std::string_view jobId, unsigned salt) {
  // FNV-1a over the job id, then the salt: stable, and well spread for consecutive ids.
  uint64_t h = 1469598103934665603ULL;
  for (char c : jobId) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ salt) * 1099511628211ULL;
  constexpr int kSlots = (60000 - 20000) / kTfPortsPerNode;
  return 20000 + static_cast<int>(h % kSlots) * kTfPortsPerNode;
}

}  // namespace hvd::cli
