// runtime/api/process_set_table.h: the facade's book of process sets (hvd::addProcessSet):
// each set's job ranks on every rank, its Runtime on its members, the words that map a set's
// rank numbers to the job's, and the handle bits that say which set a request went to. The
// collective parts of adding and removing stay in hvd.cc, over the job's own calls.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "runtime/core/runtime.h"

namespace hvd::api {

// "0, 1, 2", the first 16 of them, then ", ...".
std::string rankListText(const std::vector<int>& ranks);

// "in process set 1 (its ranks 0-2 are the job's ranks 1, 2, 3)": put before a set's
// failures and its engine's log lines, which number its ranks from 0.
std::string setLabel(int processSet, const std::vector<int>& ranks);

// A handle carries its set above the engine's own number (engines count from 1).
Handle toHandle(int processSet, std::int64_t engineHandle);
int setOf(Handle handle);
std::int64_t engineHandleOf(Handle handle);

class ProcessSetTable {
 public:
  struct Entry {
    std::vector<int> ranks;            // job ranks, sorted
    std::shared_ptr<Runtime> runtime;  // null on a rank outside the set
  };

  // The set's runtime on this rank (`jobRank`); kInvalidArgument for an unknown id,
  // kInvalidUsage when this rank is not a member.
  Result<std::shared_ptr<Runtime>> runtimeFor(int processSet, int jobRank) const;
  // A broadcast root, a job rank (Horovod's convention), as the set's engine counts it.
  Result<int> rootIn(int processSet, int root) const;
  // `s` with the set's label in front (unchanged when ok, or for set 0 or a set gone).
  Status labelled(Status s, int processSet) const;
  Result<std::vector<int>> ranksOf(int processSet) const;
  std::vector<int> ids() const;  // 0 first

  // The next set's id for `ranks`; kInvalidArgument when a set has those ranks already,
  // or they are all `jobSize` ranks (set 0's).
  Result<int> reserve(const std::vector<int>& ranks, int jobSize);
  void insert(int processSet, Entry entry);
  // The set, taken out of the book (kInvalidArgument for an unknown id).
  Result<Entry> take(int processSet);
  // Every set, the book emptied and its ids starting from 1 again (shutdown).
  std::map<int, Entry> takeAll();

 private:
  mutable std::mutex mutex_;
  std::map<int, Entry> sets_;
  int next_ = 1;
};

}  // namespace hvd::api
