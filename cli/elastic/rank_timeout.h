// cli/elastic/rank_timeout.h: the ranks' HVD_TIMEOUT as their runtime will read it (its
// default and range are the runtime's, runtime/common/env_registry.cc), for what hvdrun and
// its host agents time by it: a rank frozen that long fails (supervisor.h frozenFails).
#pragma once

#include <chrono>
#include <functional>

namespace hvd::cli {

// `lookup(name)`: the value the ranks' environment gives `name`, or nullptr. A value the
// runtime would refuse (the ranks then fail at init, saying so) counts as the default.
std::chrono::seconds rankTimeout(const std::function<const char*(const char*)>& lookup);

}  // namespace hvd::cli
