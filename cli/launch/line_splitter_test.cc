// cli/launch/line_splitter_test.cc: lines come out whole whatever the chunking.
#include "cli/launch/line_splitter.h"

#include <catch2/catch.hpp>

#include <random>

using hvd::cli::LineSplitter;

TEST_CASE("lines are whole however the bytes are chunked", "[unit]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::string> lines;
    std::string stream;
    int count = static_cast<int>(rng() % 20);
    for (int i = 0; i < count; ++i) {
      std::string line(rng() % 200, static_cast<char>('a' + i % 26));
      lines.push_back(line);
      stream += line + "\n";
    }
    bool trailing = rng() % 2 == 0;
    if (trailing) {
      lines.push_back("tail-without-newline");
      stream += lines.back();
    }
    LineSplitter splitter;
    std::vector<std::string> got;
    size_t pos = 0;
    while (pos < stream.size()) {
      size_t n = 1 + rng() % 50;
      splitter.feed(std::string_view(stream).substr(pos, n), [&](std::string_view l) { got.emplace_back(l); });
      pos += n;
    }
    splitter.finish([&](std::string_view l) { got.emplace_back(l); });
    REQUIRE(got == lines);
    REQUIRE(splitter.pendingBytes() == 0);
  }
}

TEST_CASE("an empty line is still a line", "[unit]") {
  LineSplitter splitter;
  std::vector<std::string> got;
  splitter.feed("\n\nx\n", [&](std::string_view l) { got.emplace_back(l); });
  CHECK(got == std::vector<std::string>{"", "", "x"});
}
