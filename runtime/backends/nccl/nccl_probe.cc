// runtime/backends/nccl/nccl_probe.cc: NCCL is usable when libnccl loads, a GPU is visible
// and a one-rank communicator on GPU 0 allreduces one float; --check-build says [X] only
// then (the library alone, as on a login node, runs nothing).
#include <nccl.h>

#include <string>

#include "runtime/backends/backend_probe.h"
#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"
#include "runtime/backends/cuda/gpu_inventory.h"
#include "runtime/backends/nccl/nccl_library.h"

namespace hvd::backends::nccl {
namespace {

// Blocks for NCCL's initialisation (a few hundred milliseconds on one GPU).
Status oneRankAllreduce(const NcclLibrary& nccl) {
  auto driver = cuda::CudaDriver::load();
  if (!driver) return driver.status();
  auto gpu = cuda::GpuDevice::open(**driver, 0);
  if (!gpu) return gpu.status();
  auto memory = (*gpu)->scratch(sizeof(float));
  if (!memory) return memory.status();
  ncclUniqueId id{};
  HVD_RETURN_IF_ERROR(nccl.check(nccl.ncclGetUniqueId(&id), "ncclGetUniqueId"));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = nullptr;
  HVD_RETURN_IF_ERROR(nccl.check(nccl.ncclCommInitRankConfig(&comm, 1, id, 0, &config), "ncclCommInitRank"));
  const float sent = 2.5f;
  float back = 0;
  Status s = (*gpu)->copyAsync(*memory, &sent, sizeof sent);
  if (s.isOk()) {
    s = nccl.check(nccl.ncclAllReduce(*memory, *memory, 1, ncclFloat32, ncclSum, comm, (*gpu)->stream()), "ncclAllReduce");
  }
  if (s.isOk()) s = (*gpu)->copyAsync(&back, *memory, sizeof back);
  if (s.isOk()) s = (*gpu)->synchronize(std::chrono::seconds(30));
  nccl.ncclCommDestroy(comm);
  if (s.isOk() && back != sent) s = Status(Errc::kSystem, "a one-rank allreduce changed its value");
  return s;
}

}  // namespace

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = ncclVersionText(NCCL_VERSION_CODE);
  auto lib = NcclLibrary::load();
  if (!lib) {
    result.reason = lib.status().message();
    return result;
  }
  result.runVersion = ncclVersionText((*lib)->versionCode);
  cuda::GpuInventory gpus = cuda::inspectGpus();
  if (gpus.visibleGpus == 0) {
    result.reason = gpus.reason;
    return result;
  }
  if (Status s = oneRankAllreduce(**lib); !s.isOk()) {
    result.reason = "a one-rank allreduce on GPU 0 failed: " + s.message();
    return result;
  }
  result.usable = true;
  return result;
}

}  // namespace hvd::backends::nccl
