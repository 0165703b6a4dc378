// collectives/fold_schedule_test.cc: the fold onto a power of two, for every rank count up to 100.
#include "collectives/fold_schedule.h"

#include <catch2/catch.hpp>

#include <set>

#include "collectives/halving_schedule.h"

using hvd::collectives::FoldSchedule;

TEST_CASE("folding keeps a power of two of ranks, each virtual rank played by exactly one real rank, in order", "[collectives]") {
  for (int size = 1; size <= 100; ++size) {
    INFO("size " << size);
    FoldSchedule first(0, size);
    const int p = first.activeSize();
    REQUIRE(hvd::collectives::isPowerOfTwo(p));
    REQUIRE(p <= size);
    REQUIRE(2 * p > size);
    std::set<int> virtualRanks;
    int previous = -1;
    for (int v = 0; v < p; ++v) {
      int real = first.realRank(v);
      REQUIRE(real > previous);  // order kept: lower virtual ranks are lower real ranks
      previous = real;
      REQUIRE(real < size);
      FoldSchedule s(real, size);
      REQUIRE(s.participates());
      REQUIRE(s.virtualRank() == v);
    }
    int sitting = 0;
    for (int r = 0; r < size; ++r) {
      FoldSchedule s(r, size);
      if (s.participates()) virtualRanks.insert(s.virtualRank());
      if (!s.participates()) {
        ++sitting;
        // Its pair's other rank participates, sits just below it, and is folded too.
        REQUIRE(s.folded());
        FoldSchedule other(s.pairPartner(), size);
        REQUIRE(other.participates());
        REQUIRE(other.folded());
        REQUIRE(other.pairPartner() == r);
        REQUIRE(s.pairPartner() == r - 1);
      }
    }
    CHECK(static_cast<int>(virtualRanks.size()) == p);
    CHECK(sitting == size - p);
  }
}
