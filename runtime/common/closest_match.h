// runtime/common/closest_match.h: "did you mean ...?" for misspelt options, keys and
// placeholders: the candidate nearest by edit distance, if it is near enough.
#pragma once

#include <string>
#include <vector>

namespace hvd {

// Levenshtein distance (insertions, deletions and substitutions cost 1).
size_t editDistance(const std::string& a, const std::string& b);

// The candidate closest to `word`, when its distance is below `limit`; else empty. Ties go
// to the earlier candidate.
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates, size_t limit);

}  // namespace hvd
