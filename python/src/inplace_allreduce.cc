#include "inplace_allreduce.h"

#include <array>
#include <exception>
#include <optional>
#include <utility>

#include "errors.h"
#include "hvd/hvd.h"
#include "host_buffers.h"
#include "torch_tensors.h"

namespace nb = nanobind;

namespace hvd::python {
namespace {

// Set at registration and by the package (set_general_allreduce_); held for the
// process's life (a static nb::object would be destroyed after the interpreter).
PyObject* gGeneral = nullptr;
std::array<std::pair<PyObject*, ReduceOp>, 6> gOps{};  // hvd.ReduceOp's members
std::array<PyObject*, 4> gNames{};                     // "tensor", "average", "name", "op", interned

std::optional<ReduceOp> opOf(PyObject* op) {
  if (op == nullptr || op == Py_None) return ReduceOp::kAverage;
  for (const auto& [member, value] : gOps) {
    if (member == op) return value;
  }
  return std::nullopt;  // an int, a string: the general path converts or refuses it
}

// The argument slots by position or keyword; false for anything the general path must
// judge (too many, an unknown or repeated keyword).
bool bind(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, std::array<PyObject*, 4>& slots) {
  if (nargs > 4) return false;
  for (Py_ssize_t i = 0; i < nargs; ++i) slots[i] = args[i];
  Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    // Call sites' keywords are interned, so identity almost always decides.
    size_t slot = 0;
    while (slot < gNames.size() && key != gNames[slot]) ++slot;
    for (size_t i = 0; slot == gNames.size() && i < gNames.size(); ++i) {
      if (PyUnicode_Compare(key, gNames[i]) == 0) slot = i;
    }
    if (slot == gNames.size() || slots[slot] != nullptr) return false;
    slots[slot] = args[nargs + k];
  }
  return true;
}

bool isNone(PyObject* object) { return object == nullptr || object == Py_None; }

// Sets the Python exception for a failed call; returns null for the caller to return.
PyObject* raised(const Status& status) {
  try {
    raiseStatus(status);
  } catch (nb::python_error& error) {
    error.restore();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

// The call's result (the tensor, or null with an exception set) when the fast path takes
// it; nullopt, with nothing done, when it is the general path's.
std::optional<PyObject*> fastPath(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  std::array<PyObject*, 4> slots{};
  if (!bind(args, nargs, kwnames, slots) || slots[0] == nullptr || !isNone(slots[1]) || !isNone(slots[2])) {
    return std::nullopt;
  }
  std::optional<ReduceOp> op = opOf(slots[3]);
  if (!op) return std::nullopt;
  nb::handle tensor(slots[0]);
  void* data = nullptr;
  size_t count = 0;
  DataType type{};
  std::optional<TorchView> view;
  std::span<const std::int64_t> rowShape;
  std::optional<HostBuffer> buffer = writableDenseBuffer(tensor);  // held until the call is done
  if (buffer) {
    data = buffer->data(), count = buffer->count(), type = buffer->type(), rowShape = buffer->rowShape();
  } else if ((view = denseCpuTensor(tensor))) {
    data = view->data, count = view->count, type = view->type, rowShape = view->rowShape();
  } else {
    return std::nullopt;
  }
  Status status = [&] {
    nb::gil_scoped_release release;
    return hvd::allreduce(data, count, type, *op, rowShape);
  }();
  if (PyErr_Occurred()) {  // Ctrl-C ended the wait (collectives.cc, pythonInterrupted)
    Py_INCREF(slots[0]);   // the request in flight may still write into it: kept for good
    return nullptr;
  }
  if (!status.isOk()) return raised(status);
  return Py_NewRef(slots[0]);
}

PyObject* allreduceInPlace(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (std::optional<PyObject*> result = fastPath(args, nargs, kwnames)) return *result;
  if (gGeneral == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "hvd: the hvd package has not set its general allreduce_ (import hvd)");
    return nullptr;
  }
  return PyObject_Vectorcall(gGeneral, args, nargs, kwnames);
}

PyMethodDef gDefinition = {
    "allreduce_", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduceInPlace)),
    METH_FASTCALL | METH_KEYWORDS,
    "allreduce_($module, /, tensor, average=None, name=None, op=None, process_set=None)\n--\n\n"
    "Reduces tensor across ranks in place and returns it (op: Average by default). A NumPy array or a dense CPU "
    "torch tensor, without name= or average=, goes to the runtime by address; anything else through the hvd "
    "package's general path."};

}  // namespace

void registerInplaceAllreduce(nb::module_& m) {
  nb::object ops = m.attr("ReduceOp");
  const std::pair<const char*, ReduceOp> members[] = {{"Sum", ReduceOp::kSum},
                                                      {"Average", ReduceOp::kAverage},
                                                      {"Min", ReduceOp::kMin},
                                                      {"Max", ReduceOp::kMax},
                                                      {"Product", ReduceOp::kProduct},
                                                      {"Adasum", ReduceOp::kAdasum}};
  for (size_t i = 0; i < gOps.size(); ++i) {
    gOps[i] = {nb::object(ops.attr(members[i].first)).release().ptr(), members[i].second};
  }
  gNames = {PyUnicode_InternFromString("tensor"), PyUnicode_InternFromString("average"),
            PyUnicode_InternFromString("name"), PyUnicode_InternFromString("op")};
  // Bound to the module, as nanobind's functions are ("$module" in the signature is then
  // left out by inspect); the entry ignores it.
  PyObject* function = PyCFunction_NewEx(&gDefinition, m.ptr(), m.attr("__name__").ptr());
  if (function == nullptr) throw nb::python_error();
  m.attr("allreduce_") = nb::steal(function);
  m.def("set_general_allreduce_", [](nb::object f) {
    PyObject* previous = gGeneral;
    gGeneral = f.release().ptr();
    Py_XDECREF(previous);  // a call in it holds its own reference
  }, nb::arg("function"),
        "The hvd package's allreduce_ for what allreduce_'s fast path does not take.");
}

}  // namespace hvd::python
