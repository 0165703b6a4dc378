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

TEST_CASE("a line longer than the limit comes out in pieces of the limit instead of growing without end", "[unit]") {
  LineSplitter splitter(10);
  std::vector<std::string> got;
  auto collect = [&](std::string_view line) { got.emplace_back(line); };
  splitter.feed("0123456", collect);
  splitter.feed("789abcdefghij", collect);
  splitter.feed("klmnopqrstu\nshort\n", collect);
  splitter.finish(collect);
  CHECK(got == std::vector<std::string>{"0123456789", "abcdefghij", "klmnopqrst", "u", "short"});
  CHECK(splitter.pendingBytes() == 0);
}
