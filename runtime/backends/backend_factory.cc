// runtime/backends/backend_factory.cc: opens the data backends the settings ask for, in
// the registry's order, and checks that CPU tensors have one.
#include "runtime/backends/backend_factory.h"

#include <algorithm>
#include <cctype>

#include "runtime/backends/factory_registry.h"

namespace hvd::backends {

Result<std::string> cpuOperations(const EnvSnapshot& env) {
  for (const char* name : {"HOROVOD_CPU_OPERATIONS", "HVD_CPU_OPERATIONS"}) {
    if (!env.isSet(name)) continue;
    std::string value = env.text(name);
    for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (value == "tcp" || value == "mpi") return value;
    return Status(Errc::kInvalidArgument, std::string(name) + "='" + env.text(name) + "' is not an operations backend here")
        .withHint("use tcp (hvd's own ring, the default) or mpi (Open MPI's collectives, under mpirun)");
  }
  return std::string("tcp");
}

Result<std::vector<std::unique_ptr<CollectiveBackend>>> openBackends(const BackendSetup& setup) {
  auto cpu = cpuOperations(*setup.env);
  if (!cpu) return cpu.status();
  std::vector<std::unique_ptr<CollectiveBackend>> opened;
  for (const FactoryEntry& entry : dataBackendFactories()) {
    if (entry.open == nullptr) {
      if (entry.id == *cpu) {
        return Status(Errc::kUnavailable, "HOROVOD_CPU_OPERATIONS=" + *cpu + " but this hvd was " +
                                              std::string(entry.notCompiledReason));
      }
      continue;
    }
    auto backend = entry.open(setup);
    if (!backend) return backend.status();  // each opener names itself in its errors
    if (*backend) opened.push_back(std::move(*backend));
  }
  bool cpuCovered = std::any_of(opened.begin(), opened.end(), [](const auto& b) { return b->supports(Device::kCpu); });
  if (!cpuCovered) return invalidUsage("no backend moves CPU tensors (HOROVOD_CPU_OPERATIONS=" + *cpu + ")");
  return opened;
}

}  // namespace hvd::backends
