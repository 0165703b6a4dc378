// cli/elastic/elastic_cpus_test.cc: the CPU blocks of ranks an elastic job adds (--bind-to).
#include "cli/elastic/elastic_cpus.h"

#include <catch2/catch.hpp>

using hvd::cli::BindTo;
using hvd::cli::ElasticCpuBlocks;

TEST_CASE("an added rank takes the block a rank that left held, and none under core when every block is held",
          "[unit]") {
  // Two blocks: the plan's workers 0 and 1 hold theirs by local rank.
  ElasticCpuBlocks blocks(BindTo::kCore, 2, {{0, 0}, {1, 1}});
  CHECK_FALSE(blocks.give(2, {0, 1, 2}));  // both held: it runs unpinned
  CHECK(blocks.give(3, {0, 3}) == 1);      // worker 1 left: its block is free
  CHECK_FALSE(blocks.give(4, {0, 3, 4}));
  CHECK(blocks.give(5, {3, 5}) == 0);  // worker 0 left too
}

TEST_CASE("where --bind-to shares, an added rank with no free block takes the one fewest running ranks hold",
          "[unit]") {
  for (BindTo bind : {BindTo::kCoreOverloadAllowed, BindTo::kSocket}) {
    ElasticCpuBlocks blocks(bind, 3, {{0, 0}, {1, 1}, {2, 2}});
    CHECK(blocks.give(3, {0, 1, 2, 3}) == 0);     // all held once: the first
    CHECK(blocks.give(4, {0, 1, 2, 3, 4}) == 1);  // block 0 twice now
    CHECK(blocks.give(5, {1, 2, 3, 4, 5}) == 0);  // worker 0 left: block 0 once, 1 twice, 2 once
  }
}

TEST_CASE("a host the plan gave no ranks starts with every block free", "[unit]") {
  ElasticCpuBlocks blocks(BindTo::kCore, 2, {});
  CHECK(blocks.give(4, {4}) == 0);
  CHECK(blocks.give(5, {4, 5}) == 1);
  CHECK(blocks.blocks() == 2);
  CHECK_FALSE(ElasticCpuBlocks(BindTo::kCore, 0, {}).give(1, {1}));  // no blocks at all
}
