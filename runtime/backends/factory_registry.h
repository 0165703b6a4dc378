// runtime/backends/factory_registry.h: the generated list of data backends' openers
// (factory_registry.cc.in), for backend_factory.cc; not for other callers.
#pragma once

#include <span>
#include <string_view>

#include "runtime/backends/backend_factory.h"

namespace hvd::backends {

struct FactoryEntry {
  std::string_view id;                 // "mpi", "tcp"
  OpenFn open = nullptr;               // null when not compiled in
  std::string_view notCompiledReason;  // set when open is null
};

// Every data backend, compiled in or not, in order of preference.
std::span<const FactoryEntry> dataBackendFactories();
// The GPU backends, compiled in or not, in order of preference ("nccl", "cuda": the
// staged path). An opener returns kUnavailable with the reason when it cannot run here.
std::span<const FactoryEntry> gpuBackendFactories();

}  // namespace hvd::backends
