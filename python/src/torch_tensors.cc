#include "torch_tensors.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <utility>
#include <vector>

namespace nb = nanobind;

namespace hvd::python {
namespace {

// Set by use_torch; read with the GIL held, so no lock.
PyTypeObject* gTensorType = nullptr;
std::vector<std::pair<PyObject*, DataType>> gDtypes;  // torch dtype objects live as long as torch

PyObject* interned(const char* name) { return PyUnicode_InternFromString(name); }

// Each returns a new reference, or null with the Python error set.
PyObject* attribute(PyObject* object, PyObject* name) { return PyObject_GetAttr(object, name); }
PyObject* method(PyObject* object, PyObject* name) {
  // The spare slot before self lets the call skip building a bound method (the offset flag
  // allows the callee to borrow args[-1]).
  PyObject* args[2] = {nullptr, object};
  return PyObject_VectorcallMethod(name, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

// true when the read gave exactly `expected` (Py_True or Py_False).
bool is(PyObject* got, PyObject* expected) {
  bool same = got == expected;
  Py_XDECREF(got);
  return same;
}

std::optional<DataType> typeOf(PyObject* dtype) {
  std::optional<DataType> type;
  for (const auto& [object, code] : gDtypes) {
    if (object == dtype) type = code;
  }
  Py_XDECREF(dtype);
  return type;
}

}  // namespace

std::optional<TorchView> denseCpuTensor(nb::handle handle) {
  PyObject* t = handle.ptr();
  if (gTensorType == nullptr || Py_TYPE(t) != gTensorType) return std::nullopt;
  static PyObject* const kIsCpu = interned("is_cpu");
  static PyObject* const kRequiresGrad = interned("requires_grad");
  static PyObject* const kDtype = interned("dtype");
  static PyObject* const kIsContiguous = interned("is_contiguous");
  static PyObject* const kNumel = interned("numel");
  static PyObject* const kDataPtr = interned("data_ptr");
  std::optional<DataType> type;
  if (is(attribute(t, kIsCpu), Py_True) && is(attribute(t, kRequiresGrad), Py_False) &&
      is(method(t, kIsContiguous), Py_True) && (type = typeOf(attribute(t, kDtype)))) {
    PyObject* numel = method(t, kNumel);
    PyObject* address = numel ? method(t, kDataPtr) : nullptr;
    std::optional<TorchView> view;
    if (address) {
      size_t count = PyLong_AsSize_t(numel);
      void* data = PyLong_AsVoidPtr(address);
      if (!PyErr_Occurred()) view = TorchView{data, count, *type};
    }
    Py_XDECREF(numel);
    Py_XDECREF(address);
    if (view) return view;
  }
  PyErr_Clear();
  return std::nullopt;
}

void registerTorchTensors(nb::module_& m) {
  m.def("use_torch", [](nb::type_object tensorType, std::vector<std::pair<nb::object, int>> dtypes) {
    gDtypes.clear();
    for (auto& [dtype, code] : dtypes) {
      if (code < 0 || code >= kDataTypeCount) throw nb::value_error("hvd: unknown dtype code");
      gDtypes.emplace_back(dtype.release().ptr(), static_cast<DataType>(code));  // kept for the process's life
    }
    gTensorType = reinterpret_cast<PyTypeObject*>(tensorType.release().ptr());
  }, nb::arg("tensor_type"), nb::arg("dtypes"),
        "Called by hvd.torch: torch.Tensor and (torch dtype, dtype code) pairs, for the *_torch calls.");
}

}  // namespace hvd::python
