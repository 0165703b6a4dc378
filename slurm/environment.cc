// slurm/environment.cc: environ-style arrays to an Environment.
#include "slurm/environment.h"

namespace hvd::slurm {

Environment environmentFrom(const char* const* entries) {
  Environment env;
  for (; entries != nullptr && *entries != nullptr; ++entries) {
    std::string_view kv(*entries);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.insert_or_assign(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

}  // namespace hvd::slurm
