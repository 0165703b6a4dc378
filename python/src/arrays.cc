#include "arrays.h"

#include <optional>
#include <string>

namespace nb = nanobind;

namespace hvd::python {
namespace {

using nb::dlpack::dtype_code;

std::optional<DataType> runtimeType(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dtype_code>(t.code)) {
    case dtype_code::Float:
      if (t.bits == 16) return DataType::kFloat16;
      if (t.bits == 32) return DataType::kFloat32;
      if (t.bits == 64) return DataType::kFloat64;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return DataType::kBFloat16;
      break;
    case dtype_code::Int:
      if (t.bits == 8) return DataType::kInt8;
      if (t.bits == 16) return DataType::kInt16;
      if (t.bits == 32) return DataType::kInt32;
      if (t.bits == 64) return DataType::kInt64;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return DataType::kUInt8;
      if (t.bits == 16) return DataType::kUInt16;
      break;
    case dtype_code::Bool:
      if (t.bits == 8) return DataType::kBool;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// "float32, float64, ..., bool": every type the runtime has, for the TypeError.
std::string supportedTypes() {
  std::string list;
  for (int i = 0; i < kDataTypeCount; ++i) {
    list += (i ? ", " : "") + std::string(dataTypeName(static_cast<DataType>(i)));
  }
  return list;
}

// The dtype as the frameworks spell it, for the TypeError.
std::string dtypeName(nb::dlpack::dtype t) {
  std::string kind;
  switch (static_cast<dtype_code>(t.code)) {
    case dtype_code::Int: kind = "int"; break;
    case dtype_code::UInt: kind = "uint"; break;
    case dtype_code::Float: kind = "float"; break;
    case dtype_code::Bfloat: kind = "bfloat"; break;
    case dtype_code::Complex: kind = "complex"; break;
    case dtype_code::Bool: return "bool";
    default: kind = "float8 variant " + std::to_string(t.code) + " of "; break;
  }
  std::string name = kind + std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

std::optional<Device> runtimeDevice(int deviceType) {
  switch (deviceType) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:  // pinned host memory: the CPU reads it
      return Device::kCpu;
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value:
      return Device::kCuda;
    default:
      return std::nullopt;
  }
}

template <typename Array>
ArrayView view(const Array& array, const char* role) {
  auto type = runtimeType(array.dtype());
  if (!type)
    throw nb::type_error(("hvd: " + std::string(role) + " has dtype " + dtypeName(array.dtype()) +
                          ", which hvd cannot reduce or move; supported: " + supportedTypes())
                             .c_str());
  auto device = runtimeDevice(array.device_type());
  if (!device)
    throw nb::type_error(("hvd: " + std::string(role) + " lives on DLPack device type " +
                          std::to_string(array.device_type()) + "; hvd takes CPU and CUDA memory")
                             .c_str());
  // Row-major and dense: each stride equals the product of the later extents (a stride
  // along an extent of 1 is never used, whatever it says; an empty array reads nothing).
  int64_t expected = 1;
  for (size_t i = array.ndim(); array.size() > 0 && i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected)
      throw nb::value_error(("hvd: " + std::string(role) +
                             " is not contiguous (a strided view or a transpose); pass a contiguous copy "
                             "(tensor.contiguous(), numpy.ascontiguousarray)")
                                .c_str());
    expected *= static_cast<int64_t>(array.shape(i));
  }
  return ArrayView{const_cast<void*>(static_cast<const void*>(array.data())), array.size(), *type, *device};
}

}  // namespace

ArrayView viewOf(const InArray& array, const char* role) { return view(array, role); }
ArrayView viewOf(const OutArray& array, const char* role) { return view(array, role); }

std::span<const int64_t> rowShapeOf(const InArray& array) {
  if (array.ndim() < 2) return {};
  return {array.shape_ptr() + 1, array.ndim() - 1};
}

std::span<const int64_t> rowShapeOf(const OutArray& array) {
  if (array.ndim() < 2) return {};
  return {array.shape_ptr() + 1, array.ndim() - 1};
}

void requireSameShape(const ArrayView& in, const ArrayView& out) {
  if (in.type != out.type || in.count != out.count || in.device != out.device)
    throw nb::value_error(("hvd: the output (" + std::to_string(out.count) + " " +
                           std::string(dataTypeName(out.type)) + ") must match the input (" +
                           std::to_string(in.count) + " " + std::string(dataTypeName(in.type)) +
                           ") in size, dtype and device")
                              .c_str());
}

nb::ndarray<nb::numpy, uint8_t> ownedBytes(std::vector<std::byte>&& bytes) {
  auto* owned = new std::vector<std::byte>(std::move(bytes));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<std::byte>*>(p); });
  return nb::ndarray<nb::numpy, uint8_t>(owned->data(), {owned->size()}, owner);
}

nb::object gatheredBytes(hvd::Gathered&& gathered) {
  if (gathered.device == Device::kCpu || gathered.onDevice == nullptr) {
    return nb::cast(ownedBytes(std::move(gathered.data)));
  }
  auto* owned = new std::shared_ptr<std::byte>(std::move(gathered.onDevice));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::shared_ptr<std::byte>*>(p); });
  const size_t shape[1] = {gathered.onDeviceBytes};
  return nb::cast(nb::ndarray<nb::pytorch, uint8_t>(owned->get(), 1, shape, owner, nullptr, nb::dtype<uint8_t>(),
                                                    nb::device::cuda::value, gathered.deviceOrdinal));
}

}  // namespace hvd::python
