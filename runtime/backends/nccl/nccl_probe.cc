// runtime/backends/nccl/nccl_probe.cc: NCCL is usable when libnccl loads and a GPU is
// visible; the library alone (as on a login node) is not enough to run a collective.
#include <nccl.h>

#include <string>

#include "runtime/backends/backend_probe.h"
#include "runtime/backends/cuda/gpu_inventory.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::nccl {
namespace {

// NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100.
std::string versionText(int code) {
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  int patch = code % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = versionText(NCCL_VERSION_CODE);
  auto lib = DynamicLibrary::open({"libnccl.so." + std::to_string(NCCL_MAJOR), "libnccl.so", HVD_NCCL_LIBRARY});
  if (!lib) {
    result.reason = "libnccl cannot be loaded (" + lib.status().message() + ")";
    return result;
  }
  using GetVersionFn = ncclResult_t (*)(int*);
  auto getVersion = lib->function<GetVersionFn>("ncclGetVersion");
  int code = 0;
  if (getVersion == nullptr || getVersion(&code) != ncclSuccess) {
    result.reason = lib->path() + " does not report an NCCL version";
    return result;
  }
  result.runVersion = versionText(code);
  cuda::GpuInventory gpus = cuda::inspectGpus();
  if (gpus.visibleGpus == 0) {
    result.reason = gpus.reason;
    return result;
  }
  result.usable = true;
  return result;
}

}  // namespace hvd::backends::nccl
