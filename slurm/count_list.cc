// slurm/count_list.cc: "2(x3),1" and friends.
#include "slurm/count_list.h"

#include <charconv>
#include <cstdint>
#include <string>

namespace hvd::slurm {
namespace {

bool parseUnsigned(std::string_view text, uint64_t& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<std::vector<int>> parseCountList(std::string_view text, std::string_view variable, int minimum,
                                        size_t maxEntries) {
  std::vector<int> counts;
  auto fail = [&](size_t position, std::string_view item, const std::string& why) {
    return invalidArgument(std::string(variable) + "='" + std::string(text) + "': item '" + std::string(item) +
                           "' at position " + std::to_string(position + 1) + " " + why +
                           " (expected counts like 2(x3),1)");
  };
  if (text.empty()) return invalidArgument(std::string(variable) + " is set but empty");
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::string_view countText = item;
    uint64_t repeat = 1;
    if (size_t open = item.find('('); open != std::string_view::npos) {
      if (item.size() < open + 4 || item.substr(open, 2) != "(x" || item.back() != ')') {
        return fail(start, item, "is not N or N(xM)");
      }
      countText = item.substr(0, open);
      if (!parseUnsigned(item.substr(open + 2, item.size() - open - 3), repeat) || repeat == 0) {
        return fail(start, item, "has a repeat count that is not a whole number of at least 1");
      }
    }
    uint64_t count = 0;
    if (!parseUnsigned(countText, count) || count > 1u << 30) return fail(start, item, "is not a whole number");
    if (count < static_cast<uint64_t>(minimum)) {
      return fail(start, item, "is below the minimum of " + std::to_string(minimum));
    }
    if (repeat > maxEntries - counts.size()) {
      return invalidArgument(std::string(variable) + "='" + std::string(text) + "' describes more than " +
                             std::to_string(maxEntries) + " nodes");
    }
    counts.insert(counts.end(), repeat, static_cast<int>(count));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

Status checkCountMatchesNodes(const std::vector<int>& counts, std::string_view variable, size_t nodes,
                              std::string_view nodesVariable) {
  if (counts.size() == nodes) return Status::ok();
  return invalidArgument(std::string(variable) + " describes " + std::to_string(counts.size()) + " node(s) but " +
                         std::string(nodesVariable) + " lists " + std::to_string(nodes));
}

}  // namespace hvd::slurm
