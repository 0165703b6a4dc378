// runtime/backends/nccl/nccl_library.h: libnccl, loaded with dlopen (ranks and hvdrun
// start on machines without it). Only the functions hvd calls, each resolved once.
#pragma once

#include <nccl.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::backends::nccl {

struct NcclLibrary {
#define HVD_NCCL_FN(name) decltype(&::name) name = nullptr
  HVD_NCCL_FN(ncclGetVersion);
  HVD_NCCL_FN(ncclGetUniqueId);
  HVD_NCCL_FN(ncclCommInitRankConfig);
  HVD_NCCL_FN(ncclCommDestroy);
  HVD_NCCL_FN(ncclCommAbort);
  HVD_NCCL_FN(ncclCommGetAsyncError);
  HVD_NCCL_FN(ncclGetErrorString);
  HVD_NCCL_FN(ncclGetLastError);
  HVD_NCCL_FN(ncclAllReduce);
  HVD_NCCL_FN(ncclBroadcast);
  HVD_NCCL_FN(ncclAllGather);
  HVD_NCCL_FN(ncclReduceScatter);
  HVD_NCCL_FN(ncclReduce);
  HVD_NCCL_FN(ncclSend);
  HVD_NCCL_FN(ncclRecv);
  HVD_NCCL_FN(ncclGroupStart);
  HVD_NCCL_FN(ncclGroupEnd);
#undef HVD_NCCL_FN

  std::string path;  // the library the loader resolved
  int versionCode = 0;

  // Loads libnccl once per process and keeps it. kUnavailable naming the candidates tried
  // and the loader's reasons, or a library lacking a function (older than NCCL 2.14).
  static Result<const NcclLibrary*> load();
  // The same from other library names, uncached; for tests of the failure paths.
  static Result<NcclLibrary> loadFrom(const std::vector<std::string>& candidates);

  // ok for ncclSuccess; otherwise kRemote for a remote or system failure (a peer died, the
  // network broke), kInvalidUsage for misuse (e.g. two ranks on one GPU), naming `what`,
  // NCCL's error and its last message.
  Status check(ncclResult_t rc, std::string_view what) const;
};

// "NCCL 2.28.3" from NCCL_VERSION_CODE or ncclGetVersion's code.
std::string ncclVersionText(int code);

// NCCL_VERSION_CODE of the nccl.h hvd was compiled against (Horovod's nccl_built()).
int buildVersionCode();

}  // namespace hvd::backends::nccl
