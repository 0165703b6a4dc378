// runtime/common/stream_copy_test.cc
#include "runtime/common/stream_copy.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

TEST_CASE("streamCopy copies every byte exactly, at every relative alignment and around its block size", "[stream_copy]") {
  std::vector<std::byte> source(3 * 4096 + 200), target(source.size());
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  for (size_t from : {0, 1, 3, 17, 64}) {
    for (size_t to : {0, 2, 5, 63}) {
      for (size_t n : {0, 1, 15, 2047, 2048, 2049, 4096 + 33, 3 * 4096}) {
        std::fill(target.begin(), target.end(), std::byte{0xEE});
        hvd::streamCopy(target.data() + to, source.data() + from, n);
        INFO("from " << from << " to " << to << " n " << n);
        bool same = std::equal(source.begin() + from, source.begin() + from + n, target.begin() + to);
        CHECK(same);
        // Nothing written past either end.
        bool untouched = std::all_of(target.begin(), target.begin() + to, [](std::byte b) { return b == std::byte{0xEE}; }) &&
                         std::all_of(target.begin() + to + n, target.end(), [](std::byte b) { return b == std::byte{0xEE}; });
        CHECK(untouched);
      }
    }
  }
}
