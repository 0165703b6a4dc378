// collectives/allreduce_test.cc: which allreduce runs for a rank count, size and request.
#include "collectives/allreduce.h"

#include <catch2/catch.hpp>

using hvd::collectives::AllreduceAlgorithm;
using hvd::collectives::AllreduceVariant;
using hvd::collectives::chooseAllreduce;
using hvd::collectives::kSmallAllreduceBytes;

TEST_CASE("auto takes the pairwise algorithms on powers of two, and off them the ring but folded recursive doubling for small buffers from 5 ranks", "[collectives]") {
  const size_t small = kSmallAllreduceBytes, large = kSmallAllreduceBytes + 1;
  for (int size : {2, 4, 8, 64}) {
    CHECK(chooseAllreduce(size, small, AllreduceAlgorithm::kAuto) == AllreduceVariant::kRecursiveDoubling);
    CHECK(chooseAllreduce(size, large, AllreduceAlgorithm::kAuto) == AllreduceVariant::kHalvingDoubling);
  }
  // 3 ranks: folded recursive doubling takes 3 steps to the ring's 2.
  CHECK(chooseAllreduce(3, small, AllreduceAlgorithm::kAuto) == AllreduceVariant::kRingSmall);
  for (int size : {5, 6, 7, 12, 48}) {
    INFO("size " << size);
    CHECK(chooseAllreduce(size, small, AllreduceAlgorithm::kAuto) == AllreduceVariant::kRecursiveDoubling);
    CHECK(chooseAllreduce(size, large, AllreduceAlgorithm::kAuto) == AllreduceVariant::kRingLarge);
  }
}

TEST_CASE("an algorithm asked for by name runs on any rank count", "[collectives]") {
  for (int size : {1, 2, 3, 6, 8}) {
    CHECK(chooseAllreduce(size, 8, AllreduceAlgorithm::kRing) == AllreduceVariant::kRingSmall);
    CHECK(chooseAllreduce(size, 1 << 20, AllreduceAlgorithm::kRing) == AllreduceVariant::kRingLarge);
    CHECK(chooseAllreduce(size, 8, AllreduceAlgorithm::kHalvingDoubling) == AllreduceVariant::kRecursiveDoubling);
    CHECK(chooseAllreduce(size, 1 << 20, AllreduceAlgorithm::kHalvingDoubling) == AllreduceVariant::kHalvingDoubling);
  }
}
