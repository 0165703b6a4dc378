// runtime/engine/wire.h: the byte form of what ranks allgather during negotiation
// (announcements, stall reports). Little-endian fixed-width fields and length-prefixed
// strings; a Reader that runs past the end or meets a bad value fails instead of reading
// garbage, so a corrupted exchange is an error, not undefined behaviour.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine/message_table.h"

namespace hvd::engine {

class WireWriter {
 public:
  void u64(std::uint64_t v);
  void text(const std::string& s);
  void spec(const Spec& s);
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  bool u64(std::uint64_t& v);
  bool text(std::string& s);
  bool spec(Spec& s);
  bool atEnd() const { return at_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

}  // namespace hvd::engine
