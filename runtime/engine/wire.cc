// runtime/engine/wire.cc: encoding and checked decoding.
#include "runtime/engine/wire.h"

#include <cstring>

namespace hvd::engine {

void WireWriter::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::byte>(v >> (8 * i)));
}

void WireWriter::text(const std::string& s) {
  u64(s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  bytes_.insert(bytes_.end(), p, p + s.size());
}

namespace {

// Rows travel with every kind that splits a tensor into them, and with an allreduce or a
// broadcast only when its caller gave a shape (kRowsFollow set): the common 1-D request
// stays three words.
constexpr std::uint64_t kRowsFollow = std::uint64_t{1} << 32;
bool alwaysRows(OpKind kind) { return sharesRows(kind) || kind == OpKind::kReducescatter; }

}  // namespace

void WireWriter::spec(const Spec& s) {
  const bool rows = alwaysRows(s.kind) || (s.kind != OpKind::kBarrier && s.rows.dims != 0);
  u64(static_cast<std::uint64_t>(s.kind) | static_cast<std::uint64_t>(s.type) << 8 |
      static_cast<std::uint64_t>(s.op) << 16 | static_cast<std::uint64_t>(s.device) << 24 | (rows ? kRowsFollow : 0));
  u64(static_cast<std::uint64_t>(static_cast<std::uint32_t>(s.root)));
  u64(s.count);
  if (!rows) return;
  u64(s.rows.elements);
  u64(s.rows.dims);
  for (std::uint32_t extent : s.rows.extents) u64(extent);
}

bool WireReader::u64(std::uint64_t& v) {
  if (bytes_.size() - at_ < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(bytes_[at_ + static_cast<size_t>(i)]) << (8 * i);
  at_ += 8;
  return true;
}

bool WireReader::text(std::string& s) {
  std::uint64_t n = 0;
  if (!u64(n) || n > bytes_.size() - at_) return false;
  s.assign(reinterpret_cast<const char*>(bytes_.data() + at_), n);
  at_ += n;
  return true;
}

bool WireReader::spec(Spec& s) {
  std::uint64_t packed = 0, root = 0, count = 0;
  if (!u64(packed) || !u64(root) || !u64(count)) return false;
  auto kind = packed & 0xff, type = (packed >> 8) & 0xff, op = (packed >> 16) & 0xff, device = (packed >> 24) & 0xff;
  if (kind >= static_cast<std::uint64_t>(kOpKindCount) || type >= static_cast<std::uint64_t>(kDataTypeCount) || op >= static_cast<std::uint64_t>(kReduceOpCount) ||
      device > 1 || (packed >> 32) > 1 || root > 0x7fffffff) {
    return false;
  }
  s = Spec{static_cast<OpKind>(kind), static_cast<DataType>(type), static_cast<ReduceOp>(op), static_cast<int>(root), count,
           static_cast<Device>(device)};
  const bool rows = (packed & kRowsFollow) != 0;
  if (rows != alwaysRows(s.kind) && (!rows || s.kind == OpKind::kBarrier)) return false;
  if (!rows) return true;
  std::uint64_t elements = 0, dims = 0;
  if (!u64(elements) || !u64(dims)) return false;
  if (dims > RowShape::kMaxDims && dims != RowShape::kNotHeld) return false;
  s.rows.elements = elements;
  s.rows.dims = static_cast<std::uint8_t>(dims);
  for (std::uint32_t& extent : s.rows.extents) {
    std::uint64_t value = 0;
    if (!u64(value) || value > 0xffffffffull) return false;
    extent = static_cast<std::uint32_t>(value);
  }
  return true;
}

}  // namespace hvd::engine
