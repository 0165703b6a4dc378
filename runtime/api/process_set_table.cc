// runtime/api/process_set_table.cc: the book of process sets, under one mutex.
#include "runtime/api/process_set_table.h"

#include <algorithm>

namespace hvd::api {
namespace {

constexpr int kHandleSetShift = 40;

Status unknownProcessSet(int processSet) {
  return Status(Errc::kInvalidArgument, "process set " + std::to_string(processSet) + " does not exist")
      .withHint("use the id addProcessSet returned (0 is the whole job); a removed set is gone");
}

}  // namespace

std::string rankListText(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) text += ", ...";
  return text;
}

std::string setLabel(int processSet, const std::vector<int>& ranks) {
  return "in process set " + std::to_string(processSet) + " (its ranks 0-" + std::to_string(ranks.size() - 1) +
         " are the job's ranks " + rankListText(ranks) + ")";
}

Handle toHandle(int processSet, std::int64_t engineHandle) {
  return (static_cast<Handle>(processSet) << kHandleSetShift) | engineHandle;
}
int setOf(Handle handle) { return handle < 0 ? 0 : static_cast<int>(handle >> kHandleSetShift); }
std::int64_t engineHandleOf(Handle handle) {
  return handle < 0 ? handle : handle & ((Handle{1} << kHandleSetShift) - 1);
}

Result<std::shared_ptr<Runtime>> ProcessSetTable::runtimeFor(int processSet, int jobRank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(processSet);
  if (it == sets_.end()) return unknownProcessSet(processSet);
  if (!it->second.runtime) {
    return Status(Errc::kInvalidUsage, "rank " + std::to_string(jobRank) + " is not in process set " +
                                           std::to_string(processSet) + " (ranks " + rankListText(it->second.ranks) +
                                           ")")
        .withHint("make the set's calls on its members only (ProcessSet.included())");
  }
  return it->second.runtime;
}

Result<int> ProcessSetTable::rootIn(int processSet, int root) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(processSet);
  if (it == sets_.end()) return unknownProcessSet(processSet);
  const auto& ranks = it->second.ranks;
  auto at = std::find(ranks.begin(), ranks.end(), root);
  if (at == ranks.end()) {
    return Status(Errc::kInvalidArgument, "broadcast root " + std::to_string(root) + " is not in process set " +
                                              std::to_string(processSet) + " (ranks " + rankListText(ranks) + ")")
        .withHint("the root is a rank of the job that is in the set");
  }
  return static_cast<int>(at - ranks.begin());
}

Status ProcessSetTable::labelled(Status s, int processSet) const {
  if (s.isOk() || processSet == 0) return s;
  std::vector<int> ranks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sets_.find(processSet);
    if (it == sets_.end()) return s;
    ranks = it->second.ranks;
  }
  return s.withContext(setLabel(processSet, ranks));
}

Result<std::vector<int>> ProcessSetTable::ranksOf(int processSet) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(processSet);
  if (it == sets_.end()) return unknownProcessSet(processSet);
  return it->second.ranks;
}

std::vector<int> ProcessSetTable::ids() const {
  std::vector<int> ids{0};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, entry] : sets_) ids.push_back(id);
  return ids;
}

Result<int> ProcessSetTable::reserve(const std::vector<int>& ranks, int jobSize) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto taken = [&](int id) {
    return Status(Errc::kInvalidArgument, "add_process_set(" + rankListText(ranks) + "): process set " +
                                              std::to_string(id) + (id == 0 ? " (the whole job)" : "") +
                                              " has these ranks already")
        .withHint("use that set; a set of every rank is the job's own, set 0");
  };
  if (static_cast<int>(ranks.size()) == jobSize) return taken(0);
  for (const auto& [id, entry] : sets_) {
    if (entry.ranks == ranks) return taken(id);
  }
  return next_++;
}

void ProcessSetTable::insert(int processSet, Entry entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  sets_[processSet] = std::move(entry);
}

Result<ProcessSetTable::Entry> ProcessSetTable::take(int processSet) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(processSet);
  if (it == sets_.end()) return unknownProcessSet(processSet);
  Entry entry = std::move(it->second);
  sets_.erase(it);
  return entry;
}

std::map<int, ProcessSetTable::Entry> ProcessSetTable::takeAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int, Entry> all;
  all.swap(sets_);
  next_ = 1;
  return all;
}

}  // namespace hvd::api
