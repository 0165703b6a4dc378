// slurm/environment.h: the process environment as plain data, so everything in slurm/
// stays a pure function of it (tests pass captured environments; the CLI passes environ).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::slurm {

using Environment = std::map<std::string, std::string, std::less<>>;

// The value, or nullopt when unset. An empty value counts as set.
inline std::optional<std::string_view> lookup(const Environment& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return std::string_view(it->second);
}

// Builds an Environment from "NAME=value" strings (environ-style); later entries win.
Environment environmentFrom(const char* const* entries);

}  // namespace hvd::slurm
