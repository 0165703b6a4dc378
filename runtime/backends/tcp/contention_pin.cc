// runtime/backends/tcp/contention_pin.cc
#include "runtime/backends/tcp/contention_pin.h"

#include <utility>

#include "runtime/common/log.h"

namespace hvd::backends::tcp {

ContentionPin::ContentionPin(std::vector<int> cpus, int localRank, bool enabled)
    : cpus_(std::move(cpus)), localRank_(localRank), enabled_(enabled && cpus_.size() > 1 && localRank >= 0) {}

void ContentionPin::beforeCall(const WaitPolicy& policy, WaitPolicy::Clock::time_point now) {
  if (!enabled_) return;
  if (!policy.contentionPersists(now)) {
    pin_.release();
    return;
  }
  const int cpu = cpus_[static_cast<size_t>(localRank_) % cpus_.size()];
  if (Status s = pin_.pinCaller(cpu); !s.isOk()) {
    logMessage(LogLevel::kDebug, "collective thread not pinned under contention: " + s.message());
    enabled_ = false;
  }
}

}  // namespace hvd::backends::tcp
