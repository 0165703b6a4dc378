// cli/supervise/line_splitter_test.cc: lines come out whole whatever the chunking.
#include "cli/supervise/line_splitter.h"

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

TEST_CASE("a progress bar's carriage returns end pieces of their own while CRLF stays one line end", "[unit]") {
  // tqdm's stream: "\r" before each redraw, "\n" when done; chunks cut anywhere.
  const std::string stream = "\r  0%|     |\r 50%|##   |\r100%|#####|\ndone\r\nlast\r";
  std::vector<std::pair<std::string, char>> expected = {
      {"", '\r'}, {"  0%|     |", '\r'}, {" 50%|##   |", '\r'}, {"100%|#####|", '\n'}, {"done\r", '\n'}, {"last", '\r'}};
  for (size_t chunk : {size_t(1), size_t(2), size_t(3), size_t(7), stream.size()}) {
    INFO("chunks of " << chunk);
    LineSplitter splitter(LineSplitter::kDefaultMaxLine, /*splitAtCarriageReturn=*/true);
    std::vector<std::pair<std::string, char>> got;
    auto collect = [&](std::string_view line, char end) { got.emplace_back(std::string(line), end); };
    for (size_t at = 0; at < stream.size(); at += chunk) splitter.feed(std::string_view(stream).substr(at, chunk), collect);
    splitter.finish(collect);
    CHECK(got == expected);
  }
  // Without the option, '\r' is an ordinary byte of the line.
  LineSplitter plain;
  std::vector<std::string> lines;
  plain.feed(stream, [&](std::string_view line) { lines.emplace_back(line); });
  plain.finish([&](std::string_view line) { lines.emplace_back(line); });
  CHECK(lines == std::vector<std::string>{"\r  0%|     |\r 50%|##   |\r100%|#####|", "done\r", "last\r"});
}

TEST_CASE("a redraw that has begun can be flushed before the next one, and a newline line cannot", "[unit]") {
  LineSplitter splitter(LineSplitter::kDefaultMaxLine, /*splitAtCarriageReturn=*/true);
  std::vector<std::pair<std::string, char>> got;
  auto collect = [&](std::string_view line, char end) { got.emplace_back(std::string(line), end); };
  splitter.feed("epoch 1 starts", collect);
  CHECK_FALSE(splitter.holdsRedraw());  // an ordinary line in the making stays whole
  splitter.feed("\n\r 10%", collect);
  CHECK(splitter.holdsRedraw());
  splitter.flushRedraw(collect);
  CHECK_FALSE(splitter.holdsRedraw());
  splitter.feed("\r 20%|\n", collect);
  CHECK(got == std::vector<std::pair<std::string, char>>{{"epoch 1 starts", '\n'}, {"", '\r'}, {" 10%", '\r'}, {"", '\r'}, {" 20%|", '\n'}});
}

TEST_CASE("a line begun without its end can be given out open and its rest comes as the next piece", "[unit]") {
  std::vector<std::pair<std::string, char>> got;
  auto collect = [&](std::string_view line, char end) { got.emplace_back(std::string(line), end); };
  LineSplitter splitter(1024, true);
  CHECK_FALSE(splitter.holdsPiece());
  splitter.feed("(Pdb) ", collect);
  CHECK(splitter.holdsPiece());
  splitter.flushPiece(collect);
  CHECK_FALSE(splitter.holdsPiece());
  splitter.flushPiece(collect);  // nothing held: nothing given
  splitter.feed("42\nname? ", collect);
  splitter.feed("\r", collect);
  CHECK_FALSE(splitter.holdsPiece());  // a '\r' last: a redraw or a CRLF, not known yet
  splitter.feed(" 10%", collect);
  CHECK(splitter.holdsPiece());
  splitter.flushPiece(collect);  // after a redraw, a redraw
  CHECK(got == std::vector<std::pair<std::string, char>>{
                   {"(Pdb) ", LineSplitter::kOpenEnd}, {"42", '\n'}, {"name? ", '\r'}, {" 10%", '\r'}});
}
