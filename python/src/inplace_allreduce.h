// python/src/inplace_allreduce.h: hvd.allreduce_ (and hvd.torch.allreduce_), compiled.
// A training step makes hundreds of small in-place allreduces; for a 4-byte one, Python's
// share of the call (a frame, nanobind's dispatch and keyword matching, reading the array)
// cost more than the collective. This entry is a plain vectorcall function: a NumPy array
// (host_buffers.h) or a dense CPU torch tensor (torch_tensors.h) with no name and no
// average= goes straight to the runtime's blocking call, the GIL released; anything else,
// odd arguments included, is handed unchanged to the package's general allreduce_, which
// reads it, reports and raises as it always has.
#pragma once
#include <nanobind/nanobind.h>

namespace hvd::python {

// allreduce_(tensor, average=None, name=None, op=None) and set_general_allreduce_; after
// registerCollectives (it reads the ReduceOp members).
void registerInplaceAllreduce(nanobind::module_& module);

}  // namespace hvd::python
