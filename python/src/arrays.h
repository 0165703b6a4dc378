// python/src/arrays.h: what the runtime needs from an array handed in from Python, any
// DLPack or buffer-protocol object (NumPy, PyTorch, TensorFlow, JAX, CuPy) taken without a
// copy: its address, element count, element type and device. Checked here once, so every
// collective raises the same errors: TypeError naming a dtype the runtime lacks, ValueError
// for a non-contiguous array (the Python layer copies where it can say so).
#pragma once
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hvd/hvd.h"
#include "hvd/types.h"

namespace hvd::python {

using InArray = nanobind::ndarray<nanobind::ro>;  // read only: inputs of out-of-place calls
using OutArray = nanobind::ndarray<>;             // written: outputs and in-place buffers

struct ArrayView {
  void* data;
  size_t count;
  DataType type;
  Device device;
};

// `role` names the argument in errors ("tensor", "output").
ArrayView viewOf(const InArray& array, const char* role);
ArrayView viewOf(const OutArray& array, const char* role);

// The array's shape past its first dimension (an allgather's rows, an allreduce's shape
// check; empty for fewer than two dimensions), viewed in place: valid while the array is.
std::span<const int64_t> rowShapeOf(const InArray& array);
std::span<const int64_t> rowShapeOf(const OutArray& array);

// An output array that must match the input it is computed from.
void requireSameShape(const ArrayView& in, const ArrayView& out);

// Bytes gathered by the runtime, handed to NumPy as a uint8 array that owns them.
nanobind::ndarray<nanobind::numpy, uint8_t> ownedBytes(std::vector<std::byte>&& bytes);

// An allgather's or alltoall's result as an array of bytes that owns it: NumPy's for host
// memory (and for an empty result), a torch tensor on its GPU for a GPU tensor's result,
// which stays there (only torch hands CUDA tensors to hvd from Python).
nanobind::object gatheredBytes(hvd::Gathered&& gathered);

}  // namespace hvd::python
