// runtime/backends/pmix/pmix_probe.cc: is the PMIx client library loadable, and which.
// PMIx_Get_version needs no server, so this works outside a job too.
#include <pmix_version.h>

#include <string>

#include "runtime/backends/backend_probe.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::pmix {

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = "PMIx " + std::to_string(PMIX_VERSION_MAJOR) + "." +
                        std::to_string(PMIX_VERSION_MINOR) + "." + std::to_string(PMIX_VERSION_RELEASE);
  auto lib = DynamicLibrary::open({"libpmix.so.2", "libpmix.so", HVD_PMIX_LIBRARY});
  if (!lib) {
    result.reason = "the PMIx library cannot be loaded (" + lib.status().message() + ")";
    return result;
  }
  using GetVersionFn = const char* (*)();
  auto getVersion = lib->function<GetVersionFn>("PMIx_Get_version");
  const char* version = getVersion != nullptr ? getVersion() : nullptr;
  if (version == nullptr) {
    result.reason = lib->path() + " does not report a PMIx version";
    return result;
  }
  result.runVersion = version;
  // "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)": the part before the parenthesis.
  if (auto cut = result.runVersion.find(" ("); cut != std::string::npos) result.runVersion.resize(cut);
  result.usable = true;
  return result;
}

}  // namespace hvd::backends::pmix
