// runtime/backends/cuda/gpu_inventory.cc: the driver's answers, through cuda_driver.
#include "runtime/backends/cuda/gpu_inventory.h"

#include <cstring>

#include "runtime/backends/cuda/cuda_driver.h"
#include "runtime/backends/cuda/gpu_device.h"

namespace hvd::backends::cuda {

GpuInventory inspectGpus() {
  GpuInventory inventory;
  auto driver = CudaDriver::load();
  if (!driver) {
    inventory.reason = driver.status().message();
    return inventory;
  }
  inventory.driverVersion = (*driver)->version;
  inventory.visibleGpus = (*driver)->deviceCount;
  return inventory;
}

Status smokeTestGpu() {
  auto driver = CudaDriver::load();
  if (!driver) return driver.status();
  auto gpu = GpuDevice::open(**driver, 0);
  if (!gpu) return gpu.status();
  auto memory = (*gpu)->scratch(4);
  if (!memory) return memory.status();
  const std::uint32_t sent = 0x68766421;  // "hvd!"
  std::uint32_t back = 0;
  HVD_RETURN_IF_ERROR((*gpu)->copyAsync(*memory, &sent, sizeof sent));
  HVD_RETURN_IF_ERROR((*gpu)->copyAsync(&back, *memory, sizeof back));
  HVD_RETURN_IF_ERROR((*gpu)->synchronize(std::chrono::seconds(10)));
  if (back != sent) return Status(Errc::kSystem, "4 bytes copied to " + (*gpu)->description() + " and back came back changed");
  return Status::ok();
}

Result<GpuIdentity> gpuIdentity(int ordinal) {
  auto driver = CudaDriver::load();
  if (!driver) return driver.status();
  const CudaDriver& d = **driver;
  CUdevice device = 0;
  HVD_RETURN_IF_ERROR(d.check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  CUuuid uuid{};
  HVD_RETURN_IF_ERROR(d.check(d.cuDeviceGetUuid(&uuid, device), "cuDeviceGetUuid"));
  char bus[32] = {};
  d.cuDeviceGetPCIBusId(bus, sizeof bus, device);
  return GpuIdentity{uuidText(uuid), bus};
}

}  // namespace hvd::backends::cuda
