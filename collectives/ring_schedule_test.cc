// collectives/ring_schedule_test.cc: the schedule, run in memory for every small ring.
#include "collectives/ring_schedule.h"

#include <catch2/catch.hpp>

#include <vector>

using hvd::collectives::Chunk;
using hvd::collectives::RingSchedule;

TEST_CASE("chunks tile the buffer exactly and differ by at most one element", "[unit][collectives]") {
  for (int size = 1; size <= 17; ++size) {
    for (size_t elements = 0; elements <= 70; ++elements) {
      RingSchedule s(0, size, elements);
      size_t next = 0, smallest = elements, largest = 0;
      for (int i = 0; i < size; ++i) {
        Chunk c = s.chunk(i);
        REQUIRE(c.offset == next);
        next += c.count;
        smallest = std::min(smallest, c.count);
        largest = std::max(largest, c.count);
      }
      REQUIRE(next == elements);
      REQUIRE(largest - smallest <= 1);
      REQUIRE(s.chunk(-1).offset == s.chunk(size - 1).offset);  // taken mod size
    }
  }
}

TEST_CASE("reduce-scatter then allgather leaves every rank with the full sum, for every small ring", "[unit][collectives]") {
  for (int size = 1; size <= 9; ++size) {
    for (size_t elements = 0; elements <= 40; ++elements) {
      // buffers[r][i] = r * 1000 + i; the sum over ranks is known.
      std::vector<std::vector<long>> buffers(static_cast<size_t>(size), std::vector<long>(elements));
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < elements; ++i) buffers[static_cast<size_t>(r)][i] = r * 1000 + static_cast<long>(i);
      }
      auto stepAll = [&](bool gather, int step) {
        // Every rank sends to its right neighbour at once: compute all messages first.
        std::vector<std::vector<long>> messages(static_cast<size_t>(size));
        for (int r = 0; r < size; ++r) {
          RingSchedule s(r, size, elements);
          Chunk c = gather ? s.gatherSendChunk(step) : s.sendChunk(step);
          auto& b = buffers[static_cast<size_t>(r)];
          messages[static_cast<size_t>(s.right())].assign(b.begin() + static_cast<long>(c.offset),
                                                          b.begin() + static_cast<long>(c.offset + c.count));
        }
        for (int r = 0; r < size; ++r) {
          RingSchedule s(r, size, elements);
          Chunk c = gather ? s.gatherRecvChunk(step) : s.recvChunk(step);
          const auto& m = messages[static_cast<size_t>(r)];
          REQUIRE(m.size() == c.count);  // what the left neighbour sent is what we expect
          for (size_t k = 0; k < c.count; ++k) {
            long& slot = buffers[static_cast<size_t>(r)][c.offset + k];
            slot = gather ? m[k] : slot + m[k];
          }
        }
      };
      RingSchedule any(0, size, elements);
      for (int step = 0; step < any.steps(); ++step) stepAll(false, step);
      for (int step = 0; step < any.steps(); ++step) stepAll(true, step);
      long rankSum = 1000L * size * (size - 1) / 2;
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < elements; ++i) {
          INFO("size " << size << " elements " << elements << " rank " << r << " index " << i);
          REQUIRE(buffers[static_cast<size_t>(r)][i] == rankSum + static_cast<long>(size) * static_cast<long>(i));
        }
      }
    }
  }
}
