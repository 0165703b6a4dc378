#include "host_buffers.h"

#include <bit>

namespace nb = nanobind;

namespace hvd::python {
namespace {

// Set by use_numpy; read with the GIL held, so no lock.
PyTypeObject* gNdarrayType = nullptr;

// The runtime's type for a struct-module format of one item (NumPy writes native formats
// without a prefix; '@', '=' and, on this little-endian build, '<' mean the same layout).
// Integer letters differ by platform (int64 is 'l' on Linux, 'q' elsewhere), so the size
// decides.
std::optional<DataType> typeOf(const char* format, Py_ssize_t itemSize) {
  if (format == nullptr) return itemSize == 1 ? std::optional(DataType::kUInt8) : std::nullopt;  // "B" implied
  if (*format == '@' || *format == '=' || (*format == '<' && std::endian::native == std::endian::little)) ++format;
  if (format[0] == '\0' || format[1] != '\0') return std::nullopt;
  switch (format[0]) {
    case 'e': return itemSize == 2 ? std::optional(DataType::kFloat16) : std::nullopt;
    case 'f': return itemSize == 4 ? std::optional(DataType::kFloat32) : std::nullopt;
    case 'd': return itemSize == 8 ? std::optional(DataType::kFloat64) : std::nullopt;
    case 'b': return itemSize == 1 ? std::optional(DataType::kInt8) : std::nullopt;
    case 'B': return itemSize == 1 ? std::optional(DataType::kUInt8) : std::nullopt;
    case '?': return itemSize == 1 ? std::optional(DataType::kBool) : std::nullopt;
    case 'h': return itemSize == 2 ? std::optional(DataType::kInt16) : std::nullopt;
    case 'H': return itemSize == 2 ? std::optional(DataType::kUInt16) : std::nullopt;
    case 'i':
    case 'l':
    case 'q':
      if (itemSize == 4) return DataType::kInt32;
      if (itemSize == 8) return DataType::kInt64;
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<HostBuffer> writableDenseBuffer(nb::handle handle) {
  PyObject* object = handle.ptr();
  if (gNdarrayType == nullptr || !PyObject_TypeCheck(object, gNdarrayType)) return std::nullopt;
  Py_buffer view;
  // Without PyBUF_STRIDES the exporter must hand over C-contiguous memory or refuse.
  if (PyObject_GetBuffer(object, &view, PyBUF_ND | PyBUF_FORMAT | PyBUF_WRITABLE) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::optional<DataType> type = view.itemsize > 0 ? typeOf(view.format, view.itemsize) : std::nullopt;
  if (!type) {
    PyBuffer_Release(&view);
    return std::nullopt;
  }
  size_t count = static_cast<size_t>(view.len / view.itemsize);
  return HostBuffer(view, count, *type);
}

void registerHostBuffers(nb::module_& m) {
  m.def("use_numpy", [](nb::type_object ndarrayType) {
    gNdarrayType = reinterpret_cast<PyTypeObject*>(ndarrayType.release().ptr());  // kept for the process's life
  }, nb::arg("ndarray_type"), "Called by the hvd package with numpy.ndarray, for the in-place fast path.");
}

}  // namespace hvd::python
