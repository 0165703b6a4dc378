// tests/support/serial_adasum.h: the answer every Adasum test compares with, in double:
// Adasum's pairwise rule written out, and the tree collectives/adasum.h promises (the pairs
// a fold makes off a power of two, then the balanced tree over neighbours).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace hvd::test {

inline std::vector<double> adasumPair(const std::vector<double>& l, const std::vector<double>& r) {
  double dot = 0, ll = 0, rr = 0;
  for (size_t i = 0; i < l.size(); ++i) dot += l[i] * r[i], ll += l[i] * l[i], rr += r[i] * r[i];
  const double cl = ll >= 1e-8 ? 1 - dot / (2 * ll) : 1, cr = rr >= 1e-8 ? 1 - dot / (2 * rr) : 1;
  std::vector<double> out(l.size());
  for (size_t i = 0; i < l.size(); ++i) out[i] = cl * l[i] + cr * r[i];
  return out;
}

// One tensor's Adasum over the ranks' tensors, leaves[r] being rank r's.
inline std::vector<double> adasumTree(const std::vector<std::vector<double>>& leaves) {
  size_t p = 1;
  while (p * 2 <= leaves.size()) p *= 2;
  const size_t extra = leaves.size() - p;
  std::vector<std::vector<double>> level;
  for (size_t i = 0; i < extra; ++i) level.push_back(adasumPair(leaves[2 * i], leaves[2 * i + 1]));
  for (size_t i = 2 * extra; i < leaves.size(); ++i) level.push_back(leaves[i]);
  while (level.size() > 1) {
    std::vector<std::vector<double>> next;
    for (size_t i = 0; i < level.size(); i += 2) next.push_back(adasumPair(level[i], level[i + 1]));
    level = std::move(next);
  }
  return level[0];
}

}  // namespace hvd::test
