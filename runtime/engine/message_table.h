// runtime/engine/message_table.h: the negotiation of named requests that are not cached.
// Every rank feeds it the same announcements in the same order (they are allgathered), so
// every rank's table reaches the same decisions at the same moment with no coordinator: a
// name is decided once all ranks have announced it, as a Response that either runs or
// carries the error (mismatched specs) that every rank reports.
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
  explicit MessageTable(int size) : size_(size) {}

  // Records rank's announcement; the Response once every rank has announced the name (the
  // entry is then dropped). A rank announcing a name twice is a protocol error: that too
  // comes back as an error Response.
  std::optional<Response> record(int rank, const Announcement& announcement);

  // Names announced by some ranks and not all yet, with the ranks that did.
  std::map<std::string, std::vector<int>> waiting() const;

 private:
  struct Entry {
    std::vector<std::optional<Spec>> specs;  // by rank
    int announced = 0;
  };
  Response decide(const std::string& name, const Entry& entry) const;

  int size_;
  std::map<std::string, Entry> entries_;
};

// "rank 0, 2 and 5" / "ranks 0-3": for messages.
std::string rankList(const std::vector<int>& ranks);

}  // namespace hvd::engine
