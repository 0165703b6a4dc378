#include "errors.h"

#include <Python.h>

#include <array>
#include <string>

namespace nb = nanobind;

namespace hvd::python {
namespace {

// One exception type per Errc, indexed by its value; owned by the module.
std::array<PyObject*, static_cast<size_t>(Errc::kInternal) + 1> exceptionFor{};

PyObject* makeException(nb::module_& module, const char* name, const char* doc, PyObject* bases) {
  std::string qualified = std::string("hvd.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw nb::python_error();
  module.attr(name) = nb::borrow(type);
  return type;
}

}  // namespace

void registerErrors(nb::module_& module) {
  PyObject* base = makeException(module, "HvdError",
                                 "A collective or the runtime failed. str() is the runtime's message (tensor, peer "
                                 "rank and host); .code names the kind of failure, .hint what to do, when known.",
                                 PyExc_RuntimeError);
  auto sub = [&](const char* name, const char* doc, PyObject* alsoA) {
    PyObject* bases = alsoA ? PyTuple_Pack(2, base, alsoA) : PyTuple_Pack(1, base);
    PyObject* type = makeException(module, name, doc, bases);
    Py_DECREF(bases);
    return type;
  };
  PyObject* invalid = sub("HvdInvalidArgumentError", "A malformed argument (a bad root rank, say).", PyExc_ValueError);
  // Also ValueError: Horovod raises ValueError where hvd finds misuse at submission (a name
  // resubmitted while pending), and code ported from it catches that.
  PyObject* usage = sub("HvdUsageError",
                        "Well-formed but impossible: ranks disagreeing on a named tensor, a name resubmitted "
                        "while pending, a call after shutdown.",
                        PyExc_ValueError);
  PyObject* peer = sub("HvdPeerError", "A peer rank failed, left or shut down; the message names it and its host.",
                       PyExc_ConnectionError);
  PyObject* timeout = sub("HvdTimeoutError", "A deadline passed (HVD_TIMEOUT, or the stall inspector's shutdown time).",
                          PyExc_TimeoutError);
  PyObject* unavailable = sub("HvdUnavailableError",
                              "Present but not usable here: no backend for the tensor's device, say.", nullptr);
  auto at = [](Errc code) -> PyObject*& { return exceptionFor[static_cast<size_t>(code)]; };
  for (auto& e : exceptionFor) e = base;
  at(Errc::kInvalidArgument) = invalid;
  at(Errc::kInvalidUsage) = usage;
  at(Errc::kRemote) = peer;
  at(Errc::kTimeout) = timeout;
  at(Errc::kUnavailable) = unavailable;
}

void raiseStatus(const Status& status) {
  PyObject* type = exceptionFor[static_cast<size_t>(status.code())];
  std::string text = status.message();
  if (!status.hint().empty()) text += " (hint: " + status.hint() + ")";
  nb::object error = nb::steal(PyObject_CallFunction(type, "s", text.c_str()));
  if (!error.is_valid()) throw nb::python_error();
  error.attr("code") = nb::str(errcName(status.code()).data(), errcName(status.code()).size());
  error.attr("hint") = nb::str(status.hint().c_str());
  PyErr_SetObject(type, error.ptr());
  throw nb::python_error();
}

}  // namespace hvd::python
