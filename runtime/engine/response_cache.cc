// runtime/engine/response_cache.cc: slots, a name index, and LRU by tick (ties: the lower
// slot), all deterministic so every rank evicts the same entry.
#include "runtime/engine/response_cache.h"

namespace hvd::engine {

std::optional<size_t> ResponseCache::find(const std::string& name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) return std::nullopt;
  return it->second;
}

const Response* ResponseCache::at(size_t slot) const {
  if (slot >= entries_.size() || !entries_[slot]) return nullptr;
  return &entries_[slot]->response;
}

bool ResponseCache::matches(size_t slot, int rank, const Spec& spec) const {
  const Response* r = at(slot);
  if (r == nullptr) return false;
  if (r->spec.kind == OpKind::kAllgather) {
    return compatible(r->spec, spec) && static_cast<size_t>(rank) < r->counts.size() &&
           r->counts[static_cast<size_t>(rank)] == spec.count;
  }
  // An alltoall's counts are each rank's own, and exchanged when it runs.
  if (r->spec.kind == OpKind::kAlltoall) return compatible(r->spec, spec);
  return r->spec == spec;
}

void ResponseCache::touch(size_t slot, std::uint64_t tick) {
  if (slot < entries_.size() && entries_[slot]) entries_[slot]->lastUsed = tick;
}

std::optional<size_t> ResponseCache::insert(const Response& response, std::uint64_t tick) {
  if (capacity_ == 0) return std::nullopt;
  erase(response.name);
  size_t slot = entries_.size();
  for (size_t s = 0; s < entries_.size(); ++s) {
    if (!entries_[s]) {
      slot = s;
      break;
    }
  }
  if (slot == entries_.size() && entries_.size() >= capacity_) {
    slot = 0;
    for (size_t s = 1; s < entries_.size(); ++s) {
      if (entries_[s]->lastUsed < entries_[slot]->lastUsed) slot = s;
    }
    byName_.erase(entries_[slot]->response.name);
  }
  if (slot == entries_.size()) entries_.emplace_back();
  entries_[slot] = Entry{response, tick};
  byName_[response.name] = slot;
  return slot;
}

void ResponseCache::erase(const std::string& name) {
  auto it = byName_.find(name);
  if (it == byName_.end()) return;
  entries_[it->second].reset();
  byName_.erase(it);
}

}  // namespace hvd::engine
