// collectives/halving_schedule_test.cc: the halving arithmetic checked exhaustively for
// every power-of-two rank count up to 64 and every length up to 100 (plus a few large).
#include "collectives/halving_schedule.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "collectives/allreduce.h"

using hvd::collectives::Chunk;
using hvd::collectives::HalvingSchedule;

TEST_CASE("power-of-two detection accepts 1, 2, 4 ... and refuses 0, 3, 6 and negatives", "[collectives]") {
  for (int n : {1, 2, 4, 8, 1024, 1 << 24}) CHECK(hvd::collectives::isPowerOfTwo(n));
  for (int n : {0, -2, 3, 5, 6, 7, 12, 1000}) CHECK_FALSE(hvd::collectives::isPowerOfTwo(n));
}

TEST_CASE("in every halving step partners hold the same range and split it between them", "[collectives]") {
  for (int size = 1; size <= 64; size *= 2) {
    for (size_t elements : std::vector<size_t>{0, 1, 2, 3, 7, 31, 64, 97, 100, 1 << 20, (1 << 20) + 3}) {
      std::vector<HalvingSchedule> all;
      for (int r = 0; r < size; ++r) all.emplace_back(r, size, elements);
      for (int r = 0; r < size; ++r) {
        const HalvingSchedule& s = all[static_cast<size_t>(r)];
        REQUIRE(1 << s.steps() == size);
        size_t lo = 0, hi = elements;
        for (int step = 0; step < s.steps(); ++step) {
          int p = s.partner(step);
          const HalvingSchedule& q = all[static_cast<size_t>(p)];
          REQUIRE(q.partner(step) == r);
          REQUIRE(s.keepsLowerHalf(step) != q.keepsLowerHalf(step));
          // What one keeps the other gives, and the two halves tile the range they shared.
          CHECK(s.kept(step).offset == q.given(step).offset);
          CHECK(s.kept(step).count == q.given(step).count);
          Chunk lower = s.keepsLowerHalf(step) ? s.kept(step) : s.given(step);
          Chunk upper = s.keepsLowerHalf(step) ? s.given(step) : s.kept(step);
          CHECK(lower.offset == lo);
          CHECK(lower.offset + lower.count == upper.offset);
          CHECK(upper.offset + upper.count == hi);
          CHECK(upper.count - lower.count <= 1);  // halves differ by at most one element
          lo = s.kept(step).offset, hi = lo + s.kept(step).count;
        }
      }
    }
  }
}

TEST_CASE("after the halving steps the ranks own disjoint blocks that cover the buffer", "[collectives]") {
  for (int size = 1; size <= 64; size *= 2) {
    for (size_t elements = 0; elements <= 100; ++elements) {
      std::vector<int> owner(elements, -1);
      for (int r = 0; r < size; ++r) {
        HalvingSchedule s(r, size, elements);
        Chunk mine = s.steps() == 0 ? Chunk{0, elements} : s.kept(s.steps() - 1);
        for (size_t i = mine.offset; i < mine.offset + mine.count; ++i) {
          REQUIRE(owner[i] == -1);
          owner[i] = r;
        }
      }
      for (size_t i = 0; i < elements; ++i) REQUIRE(owner[i] >= 0);
    }
  }
}

TEST_CASE("collective peers are the ring neighbours plus every halving partner, and off a power of two the fold partner", "[collectives]") {
  using hvd::collectives::collectivePeers;
  CHECK(collectivePeers(0, 1).empty());
  CHECK(collectivePeers(0, 2) == std::vector<int>{1});
  CHECK(collectivePeers(1, 3) == std::vector<int>{0, 2});
  CHECK(collectivePeers(0, 4) == std::vector<int>{1, 2, 3});
  CHECK(collectivePeers(5, 8) == std::vector<int>{1, 4, 6, 7});  // ring 4, 6; partners 4, 7, 1
  // Six ranks fold onto four: pairs (0, 1) and (2, 3); ranks 0, 2, 4, 5 play virtual 0-3.
  CHECK(collectivePeers(5, 6) == std::vector<int>{0, 2, 4});     // ring 4, 0; virtual 3's partners 4, 2
  CHECK(collectivePeers(1, 6) == std::vector<int>{0, 2});        // sits out: ring 0, 2; its pair 0
  CHECK(collectivePeers(0, 6) == std::vector<int>{1, 2, 4, 5});  // ring 1, 5; pair 1; partners 2, 4
  // Symmetric, or a connection would wait for a peer that never dials.
  for (int size = 1; size <= 40; ++size) {
    for (int r = 0; r < size; ++r) {
      for (int p : collectivePeers(r, size)) {
        auto back = collectivePeers(p, size);
        CHECK(std::find(back.begin(), back.end(), r) != back.end());
      }
    }
  }
}
