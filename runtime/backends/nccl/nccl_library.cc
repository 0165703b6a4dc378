// runtime/backends/nccl/nccl_library.cc: the NCCL table, filled once.
#include "runtime/backends/nccl/nccl_library.h"

#include <mutex>

#include "runtime/common/dynamic_library.h"

namespace hvd::backends::nccl {

std::string ncclVersionText(int code) {
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100.
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  int patch = code % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

int buildVersionCode() { return NCCL_VERSION_CODE; }

Result<NcclLibrary> NcclLibrary::loadFrom(const std::vector<std::string>& candidates) {
  auto library = DynamicLibrary::open(candidates);
  if (!library) return Status(Errc::kUnavailable, "libnccl cannot be loaded (" + library.status().message() + ")");
  // Kept for the life of the process (deliberately never freed): NCCL's proxy threads run
  // its code until exit.
  const DynamicLibrary& kept = *new DynamicLibrary(std::move(*library));
  NcclLibrary n;
  n.path = kept.path();
  std::string missing;
#define HVD_NCCL_LOAD(name)                                              \
  n.name = reinterpret_cast<decltype(n.name)>(kept.symbol(#name));       \
  if (n.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name)
  HVD_NCCL_LOAD(ncclGetVersion);
  HVD_NCCL_LOAD(ncclGetUniqueId);
  HVD_NCCL_LOAD(ncclCommInitRankConfig);
  HVD_NCCL_LOAD(ncclCommDestroy);
  HVD_NCCL_LOAD(ncclCommAbort);
  HVD_NCCL_LOAD(ncclCommGetAsyncError);
  HVD_NCCL_LOAD(ncclGetErrorString);
  HVD_NCCL_LOAD(ncclGetLastError);
  HVD_NCCL_LOAD(ncclAllReduce);
  HVD_NCCL_LOAD(ncclBroadcast);
  HVD_NCCL_LOAD(ncclAllGather);
  HVD_NCCL_LOAD(ncclReduceScatter);
  HVD_NCCL_LOAD(ncclReduce);
  HVD_NCCL_LOAD(ncclSend);
  HVD_NCCL_LOAD(ncclRecv);
  HVD_NCCL_LOAD(ncclGroupStart);
  HVD_NCCL_LOAD(ncclGroupEnd);
#undef HVD_NCCL_LOAD
  if (!missing.empty()) {
    return Status(Errc::kUnavailable, n.path + " lacks " + missing).withHint("hvd needs NCCL 2.14 or newer");
  }
  if (n.ncclGetVersion(&n.versionCode) != ncclSuccess) {
    return Status(Errc::kUnavailable, n.path + " does not report an NCCL version");
  }
  return n;
}

Result<const NcclLibrary*> NcclLibrary::load() {
  static std::once_flag once;
  static Result<NcclLibrary> loaded = Status(Errc::kInternal, "not loaded");
  std::call_once(once, [] {
    loaded = loadFrom({"libnccl.so." + std::to_string(NCCL_MAJOR), "libnccl.so", HVD_NCCL_LIBRARY});
  });
  if (!loaded) return loaded.status();
  return &*loaded;
}

Status NcclLibrary::check(ncclResult_t rc, std::string_view what) const {
  if (rc == ncclSuccess || rc == ncclInProgress) return Status::ok();
  std::string message = std::string(what) + " failed: " + ncclGetErrorString(rc);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
  Errc code = rc == ncclInvalidUsage || rc == ncclInvalidArgument ? Errc::kInvalidUsage
              : rc == ncclInternalError                           ? Errc::kInternal
                                                                  : Errc::kRemote;
  return Status(code, message);
}

}  // namespace hvd::backends::nccl
