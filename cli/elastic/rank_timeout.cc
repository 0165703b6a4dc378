// cli/elastic/rank_timeout.cc: read through the runtime's registry, so that its default is
// spelt once.
#include "cli/elastic/rank_timeout.h"

#include <string_view>

#include "runtime/common/env_registry.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {

std::chrono::seconds rankTimeout(const std::function<const char*(const char*)>& lookup) {
  constexpr std::string_view kName = rank_contract::kTimeout;
  auto env = EnvSnapshot::read([&](const char* name) -> const char* { return name == kName ? lookup(name) : nullptr; });
  if (!env) env = EnvSnapshot::read([](const char*) -> const char* { return nullptr; });
  return std::chrono::seconds(env->integer(kName));
}

}  // namespace hvd::cli
