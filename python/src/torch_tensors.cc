#include "torch_tensors.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <utility>
#include <vector>

namespace nb = nanobind;

namespace hvd::python {
namespace {

// One of the tensor's fields, read by calling torch.Tensor's own descriptor for it: an
// attribute lookup per read (the type's method cache, the instance dict, a bound-method
// path) cost about as much as torch's getter itself. What torch answers is the same,
// its checks for __torch_function__ included. A name that is not a C getter or method
// (a later torch may define it in Python) is read as an attribute, as before.
class Field {
 public:
  Field() = default;
  Field(PyTypeObject* tensorType, const char* name, bool isMethod)
      : name_(PyUnicode_InternFromString(name)), isMethod_(isMethod) {
    PyObject* descriptor = PyObject_GetAttr(reinterpret_cast<PyObject*>(tensorType), name_);
    if (descriptor == nullptr) {
      PyErr_Clear();
      return;
    }
    bool direct = isMethod ? PyObject_TypeCheck(descriptor, &PyMethodDescr_Type)
                           : PyObject_TypeCheck(descriptor, &PyGetSetDescr_Type);
    if (direct) {
      descriptor_ = descriptor;  // kept for the process's life, as torch.Tensor is
    } else {
      Py_DECREF(descriptor);
    }
  }

  // A new reference, or null with the Python error set. `object` is exactly a torch.Tensor.
  PyObject* read(PyObject* object) const {
    if (descriptor_ == nullptr) {
      if (!isMethod_) return PyObject_GetAttr(object, name_);
      PyObject* args[2] = {nullptr, object};
      return PyObject_VectorcallMethod(name_, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
    }
    if (isMethod_) return PyObject_Vectorcall(descriptor_, &object, 1, nullptr);
    return Py_TYPE(descriptor_)->tp_descr_get(descriptor_, object, reinterpret_cast<PyObject*>(Py_TYPE(object)));
  }

 private:
  PyObject* name_ = nullptr;
  PyObject* descriptor_ = nullptr;
  bool isMethod_ = false;
};

// Set by use_torch; read with the GIL held, so no lock.
PyTypeObject* gTensorType = nullptr;
std::vector<std::pair<PyObject*, DataType>> gDtypes;  // torch dtype objects live as long as torch
struct Fields {
  Field isCpu, requiresGrad, dtype, isContiguous, numel, dataPtr, shape;
} gFields;

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

// The shape (a torch.Size, a tuple) past its first dimension into `view`; false for a
// read that failed or more dimensions than a view holds. Takes the reference.
bool readRowShape(PyObject* shape, TorchView& view) {
  if (shape == nullptr || !PyTuple_Check(shape)) {
    Py_XDECREF(shape);
    return false;
  }
  const Py_ssize_t dims = PyTuple_GET_SIZE(shape);
  bool ok = dims <= static_cast<Py_ssize_t>(TorchView::kMaxRowDims) + 1;
  for (Py_ssize_t i = 1; ok && i < dims; ++i) {
    view.rows[static_cast<size_t>(i - 1)] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    ok = !PyErr_Occurred();
  }
  view.rowDims = ok && dims > 1 ? static_cast<size_t>(dims - 1) : 0;
  Py_DECREF(shape);
  return ok;
}

}  // namespace

std::optional<TorchView> denseCpuTensor(nb::handle handle) {
  PyObject* t = handle.ptr();
  if (gTensorType == nullptr || Py_TYPE(t) != gTensorType) return std::nullopt;
  const Fields& f = gFields;
  std::optional<DataType> type;
  if (!is(f.isCpu.read(t), Py_True) || !is(f.requiresGrad.read(t), Py_False) || !(type = typeOf(f.dtype.read(t)))) {
    PyErr_Clear();
    return std::nullopt;
  }
  PyObject* numel = f.numel.read(t);
  size_t count = numel ? PyLong_AsSize_t(numel) : 0;
  Py_XDECREF(numel);
  // One element (a loss, a metric) lies at data_ptr whatever its strides say: contiguity
  // is asked only of bigger tensors (is_contiguous is the dearest read, an argument parser).
  bool dense = numel != nullptr && !PyErr_Occurred() && (count <= 1 || is(f.isContiguous.read(t), Py_True));
  PyObject* address = dense ? f.dataPtr.read(t) : nullptr;
  void* data = address ? PyLong_AsVoidPtr(address) : nullptr;
  Py_XDECREF(address);
  if (address == nullptr || PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  TorchView view{data, count, *type};
  // A single element (a loss, a metric) is reduced alike whatever its dimensions, and its
  // shape read (a torch.Size made, ~50 ns) would be a fortieth of a 4-byte allreduce.
  if (count > 1 && !readRowShape(f.shape.read(t), view)) {
    PyErr_Clear();
    return std::nullopt;
  }
  return view;
}

void registerTorchTensors(nb::module_& m) {
  m.def("use_torch", [](nb::type_object tensorType, std::vector<std::pair<nb::object, int>> dtypes) {
    gDtypes.clear();
    for (auto& [dtype, code] : dtypes) {
      if (code < 0 || code >= kDataTypeCount) throw nb::value_error("hvd: unknown dtype code");
      gDtypes.emplace_back(dtype.release().ptr(), static_cast<DataType>(code));  // kept for the process's life
    }
    auto* type = reinterpret_cast<PyTypeObject*>(tensorType.release().ptr());
    gFields = Fields{Field(type, "is_cpu", false),       Field(type, "requires_grad", false),
                     Field(type, "dtype", false),        Field(type, "is_contiguous", true),
                     Field(type, "numel", true),         Field(type, "data_ptr", true),
                    Field(type, "shape", false)};
    gTensorType = type;
  }, nb::arg("tensor_type"), nb::arg("dtypes"),
        "Called by hvd.torch: torch.Tensor and (torch dtype, dtype code) pairs, for the *_torch calls.");
}

}  // namespace hvd::python
