// python/src/torch_tensors.h: torch CPU tensors read through the CPython API, by the names
// torch gives their fields in Python (data_ptr, numel, dtype, is_cpu, requires_grad,
// is_contiguous, shape): no torch headers, no DLPack capsule. A training step makes hundreds of
// small in-place allreduces, and for a 4-byte one reading the tensor in Python cost as
// much as the collective (docs/python.md has the figures).
#pragma once
#include <nanobind/nanobind.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "hvd/types.h"

namespace hvd::python {

struct TorchView {
  static constexpr size_t kMaxRowDims = 8;  // a tensor of more dimensions takes the general path
  void* data;
  size_t count;
  DataType type;
  std::array<std::int64_t, kMaxRowDims> rows{};  // the shape past the first dimension
  size_t rowDims = 0;
  std::span<const std::int64_t> rowShape() const { return {rows.data(), rowDims}; }
};

// use_torch(tensor_type, dtypes): called once by hvd.torch with torch.Tensor and
// [(torch dtype, runtime dtype code)].
void registerTorchTensors(nanobind::module_& module);

// The tensor's memory when it is a torch.Tensor itself (a subclass, such as a Parameter or
// one with __torch_function__, is not), on the CPU, dense, not requiring grad, of a dtype
// the runtime has; nullopt for anything else, and before hvd.torch was imported. Anything
// a read raises is cleared: the general path then reads the object and reports. Needs the GIL.
std::optional<TorchView> denseCpuTensor(nanobind::handle object);

}  // namespace hvd::python
