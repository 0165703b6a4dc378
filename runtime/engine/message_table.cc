// runtime/engine/message_table.cc: collecting announcements and checking that they agree.
#include "runtime/engine/message_table.h"

#include <algorithm>

namespace hvd::engine {

std::string rankList(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::optional<Response> MessageTable::record(int rank, const Announcement& announcement) {
  Entry& entry = entries_[announcement.name];
  if (entry.specs.empty()) entry.specs.resize(static_cast<size_t>(size_));
  auto& slot = entry.specs[static_cast<size_t>(rank)];
  if (slot) {
    Response twice{announcement.name, announcement.spec, {}, ""};
    twice.error = "tensor '" + announcement.name + "': rank " + std::to_string(rank) +
                  " announced it twice before it ran (an internal error of the engine)";
    entries_.erase(announcement.name);
    return twice;
  }
  slot = announcement.spec;
  if (++entry.announced < size_ - joinedCount_) return std::nullopt;
  Response response = decide(announcement.name, entry);
  entries_.erase(announcement.name);
  return response;
}

std::vector<Response> MessageTable::join(int rank) {
  std::vector<Response> decided;
  if (joined_[static_cast<size_t>(rank)]) return decided;
  joined_[static_cast<size_t>(rank)] = true;
  ++joinedCount_;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.announced >= size_ - joinedCount_) {
      decided.push_back(decide(it->first, it->second));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return decided;
}

void MessageTable::clearJoined() {
  joined_.assign(static_cast<size_t>(size_), false);
  joinedCount_ = 0;
}

Response MessageTable::decide(const std::string& name, const Entry& entry) const {
  // The lowest rank that announced it speaks for the spec (rank 0 unless it had joined).
  const Spec& first = **std::find_if(entry.specs.begin(), entry.specs.end(), [](const auto& s) { return s.has_value(); });
  Response response{name, first, {}, ""};
  bool agree = true;
  for (const auto& spec : entry.specs) agree = agree && (!spec || compatible(*spec, first));
  if (agree) {
    if (response.spec.kind == OpKind::kAllgather) {
      for (const auto& spec : entry.specs) response.counts.push_back(spec ? spec->count : 0);
    }
    return response;
  }
  // Group the ranks by what they asked for, in order of each group's lowest rank. Where
  // some ranks said their tensor's shape, a rank's 1-D tensor is named by its shape too.
  bool shaped = std::any_of(entry.specs.begin(), entry.specs.end(), [](const auto& s) { return s && s->rows.dims != 0; });
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < size_; ++r) {
    if (!entry.specs[static_cast<size_t>(r)]) continue;  // joined
    const Spec& spec = *entry.specs[static_cast<size_t>(r)];
    std::string text = describe(spec);
    if (shaped && spec.rows.dims == 0 && (spec.kind == OpKind::kAllreduce || spec.kind == OpKind::kBroadcast)) {
      text += " of shape " + describeShape(spec);
    }
    // Allgather and alltoall shares may differ in length: only the type, rows and device must agree.
    if (sharesRows(spec.kind)) {
      text = std::string(opKindName(spec.kind)) + " of " + std::string(dataTypeName(spec.type)) +
             (spec.rows.dims != 0 ? " in rows of shape " + describe(spec.rows) : "") +
             (spec.device == Device::kCuda ? " on the GPU" : "");
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == text; });
    if (it == groups.end()) groups.push_back({text, {r}});
    else it->second.push_back(r);
  }
  response.error = "tensor '" + name + "' was submitted differently by different ranks: ";
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i > 0) response.error += i + 1 == groups.size() ? " but " : ", ";
    response.error += rankList(groups[i].second) + " asked for " + groups[i].first;
  }
  return response;
}

std::map<std::string, std::vector<int>> MessageTable::waiting() const {
  std::map<std::string, std::vector<int>> out;
  for (const auto& [name, entry] : entries_) {
    for (int r = 0; r < size_; ++r) {
      if (entry.specs[static_cast<size_t>(r)]) out[name].push_back(r);
    }
  }
  return out;
}

}  // namespace hvd::engine
