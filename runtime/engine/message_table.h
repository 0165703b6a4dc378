// runtime/engine/message_table.h: the negotiation of named requests that are not cached.
// Every rank feeds it the same announcements in the same order (they are allgathered), so
// every rank's table reaches the same decisions at the same moment with no coordinator: a
// name is decided once all ranks have announced it, as a Response that either runs or
// carries the error (mismatched specs) that every rank reports. Ranks that called join()
// (Horovod's: they ran out of data) are not waited for; they take part with nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::engine {

struct Announcement {
  std::string name;
  Spec spec;
};

// What all ranks run for one name: the spec (rank 0's; allgather shares are in counts).
struct Response {
  std::string name;
  Spec spec;
  std::vector<std::uint64_t> counts;  // allgather: every rank's share; otherwise empty
  std::string error;                  // non-empty: the specs disagree; nothing runs
};

class MessageTable {
 public:
  explicit MessageTable(int size) : size_(size), joined_(static_cast<size_t>(size), false) {}

  // Records rank's announcement; the Response once every rank has announced the name (the
  // entry is then dropped). A rank announcing a name twice is a protocol error: that too
  // comes back as an error Response.
  std::optional<Response> record(int rank, const Announcement& announcement);

  // Names announced by some ranks and not all yet, with the ranks that did.
  std::map<std::string, std::vector<int>> waiting() const;

  // `rank` joined: names no longer wait for it. Returns those that waited for it alone
  // (in name order), decided as record() decides. An allgather gives a joined rank a share
  // of nothing. A joined rank announces nothing until clearJoined().
  std::vector<Response> join(int rank);
  // Every rank joined, and the join ended: from now on every rank must announce again.
  void clearJoined();

 private:
  struct Entry {
    std::vector<std::optional<Spec>> specs;  // by rank
    int announced = 0;
  };
  Response decide(const std::string& name, const Entry& entry) const;

  int size_;
  std::vector<bool> joined_;
  int joinedCount_ = 0;
  std::map<std::string, Entry> entries_;
};

// "rank 0, 2 and 5" / "ranks 0-3": for messages.
std::string rankList(const std::vector<int>& ranks);

}  // namespace hvd::engine
