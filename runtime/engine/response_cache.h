// runtime/engine/response_cache.h: named responses that already ran, each in a numbered
// slot, so that the next time every rank submits the same name with the same spec the
// ranks agree on it with one byte per slot on the control path instead of allgathering
// names. Every rank applies the same inserts, erases and touches in the same order, so
// the slots stay identical everywhere without being exchanged. Least recently used goes
// first when full. Capacity 0 disables it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/engine/message_table.h"

namespace hvd::engine {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  // Slots numbered 0 .. slots()-1; some may be empty after an erase (reused first).
  size_t slots() const { return entries_.size(); }
  std::optional<size_t> find(const std::string& name) const;
  // The slot's response; nullptr for an empty slot.
  const Response* at(size_t slot) const;
  // Whether `spec` is what this rank submitted when the slot's response ran (allgather:
  // this rank's share must be the same length too).
  bool matches(size_t slot, int rank, const Spec& spec) const;
  // Marks the slot used at `tick` (a counter every rank advances identically).
  void touch(size_t slot, std::uint64_t tick);
  // Caches a response that ran (replacing one of the same name); evicts the least recently
  // used when full; nothing with capacity 0. Returns the slot, if any.
  std::optional<size_t> insert(const Response& response, std::uint64_t tick);
  void erase(const std::string& name);

 private:
  struct Entry {
    Response response;
    std::uint64_t lastUsed = 0;
  };
  size_t capacity_;
  std::vector<std::optional<Entry>> entries_;
  std::unordered_map<std::string, size_t> byName_;
};

}  // namespace hvd::engine
