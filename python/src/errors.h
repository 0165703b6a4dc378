// python/src/errors.h: the runtime's Status as Python exceptions. Every failure raises an
// hvd.HvdError subclass chosen by the Status's code and carrying the runtime's message
// (which names the tensor, the peer rank and its host) and its hint.
#pragma once
#include <nanobind/nanobind.h>
#include <utility>
#include "hvd/status.h"

namespace hvd::python {

// Creates HvdError and its subclasses in the module (called once at import).
void registerErrors(nanobind::module_& module);

// Raises the exception for a failed Status; needs the GIL.
[[noreturn]] void raiseStatus(const Status& status);

inline void check(const Status& status) {
  if (!status.isOk()) raiseStatus(status);
}

template <typename T>
T check(Result<T>&& result) {
  if (!result.isOk()) raiseStatus(result.status());
  return std::move(result).value();
}

}  // namespace hvd::python
