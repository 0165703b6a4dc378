// runtime/backends/backend_probe.cc: lookups over the generated registry.
#include "runtime/backends/backend_probe.h"

namespace hvd::backends {

const BackendEntry* findBackend(std::string_view id) {
  for (const BackendEntry& entry : registeredBackends()) {
    if (entry.id == id) return &entry;
  }
  return nullptr;
}

BackendProbe probeBackend(const BackendEntry& entry) {
  if (!entry.compiled || entry.probe == nullptr) {
    BackendProbe probe;
    probe.reason = std::string(entry.notCompiledReason);
    return probe;
  }
  return entry.probe();
}

}  // namespace hvd::backends
