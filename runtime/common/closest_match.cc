// runtime/common/closest_match.cc: one row of the dynamic-programming table at a time.
#include "runtime/common/closest_match.h"

#include <algorithm>

namespace hvd {

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates, size_t limit) {
  std::string best;
  size_t bestDistance = limit;
  for (const std::string& candidate : candidates) {
    size_t d = editDistance(word, candidate);
    if (d < bestDistance) bestDistance = d, best = candidate;
  }
  return best;
}

}  // namespace hvd
