// runtime/backends/tcp/contention_pin.cc
#include "runtime/backends/tcp/contention_pin.h"

#include <string>
#include <utility>

#include "runtime/common/log.h"

namespace hvd::backends::tcp {

ContentionPin::ContentionPin(std::vector<int> cpus, int localRank, bool enabled)
    : cpus_(std::move(cpus)), localRank_(localRank), enabled_(enabled && cpus_.size() > 1 && localRank >= 0) {}

void ContentionPin::beforeCall(const WaitPolicy& policy, WaitPolicy::Clock::time_point now) {
  if (!enabled_) return;
  if (pin_.cpu() ? !policy.pinKept(now) : !policy.pinWanted(now)) {
    if (pin_.cpu())
      logMessage(LogLevel::kDebug, "collective thread given its CPUs back: no contention or crowding for 2 s");
    pin_.release();
    return;
  }
  const int cpu = cpus_[static_cast<size_t>(localRank_) % cpus_.size()];
  const bool held = pin_.cpu().has_value();
  if (Status s = pin_.pinCaller(cpu); !s.isOk()) {
    logMessage(LogLevel::kDebug, "collective thread not pinned under contention: " + s.message());
    enabled_ = false;
  } else if (!held) {
    logMessage(
        LogLevel::kDebug,
        "collective thread held on CPU " + std::to_string(cpu) +
            ": other work keeps the cores busy, or the host's ranks crowd onto one (HVD_CONTENTION_PIN=0: never)");
  }
}

}  // namespace hvd::backends::tcp
