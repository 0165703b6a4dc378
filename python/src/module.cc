// python/src/module.cc: hvd._hvd, the compiled part of the `hvd` Python package. Nothing
// but the public API of libhvd.so (hvd/hvd.h) is reached from here.
#include <nanobind/nanobind.h>

#include "collectives.h"
#include "errors.h"
#include "host_buffers.h"
#include "inplace_allreduce.h"
#include "torch_tensors.h"

NB_MODULE(_hvd, m) {
  m.doc() = "hvd's runtime (libhvd.so) for Python; use it through the hvd package.";
  hvd::python::registerErrors(m);
  hvd::python::registerCollectives(m);
  hvd::python::registerTorchTensors(m);
  hvd::python::registerHostBuffers(m);
  hvd::python::registerInplaceAllreduce(m);
}
