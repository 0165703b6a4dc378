// python/src/collectives.h: the runtime's calls as hvd._hvd functions: joining and leaving,
// the topology, and the collectives, blocking and async. Each releases the GIL for as long
// as the runtime may block, so other Python threads (a data loader, a backward pass
// producing gradients) keep running. The Python layer (python/hvd/) builds Horovod's API
// on these: output allocation in the caller's framework, names, handle bookkeeping.
#pragma once
#include <nanobind/nanobind.h>

namespace hvd::python {

void registerCollectives(nanobind::module_& module);

}  // namespace hvd::python
