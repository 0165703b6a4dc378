// cli/launch/open_mpi_tags_test.cc: each rank's lines come out whole from mpirun's
// chunk-tagged output.
#include "cli/launch/open_mpi_tags.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

using hvd::cli::OpenMpiTagReader;

namespace {

std::vector<std::pair<int, std::string>> read(const std::vector<std::string>& lines, size_t maxLine = size_t{1} << 20) {
  OpenMpiTagReader reader(maxLine);
  std::vector<std::pair<int, std::string>> got;
  auto onLine = [&](int rank, std::string_view line) { got.emplace_back(rank, std::string(line)); };
  for (const auto& line : lines) reader.feed(line, onLine);
  reader.finish(onLine);
  return got;
}

using Lines = std::vector<std::pair<int, std::string>>;

}  // namespace

TEST_CASE("a tagged line is the rank's line without the tag", "[unit]") {
  CHECK(read({"[1,3]<stdout>:hello", "[1,0]<stderr>:oops"}) == Lines{{3, "hello"}, {0, "oops"}});
}

TEST_CASE("a rank's line written in two chunks comes out once, whole", "[unit]") {
  CHECK(read({"[1,0]<stdout>:ok[1,0]<stdout>:"}) == Lines{{0, "ok"}});
  CHECK(read({"[1,2]<stdout>:ep[1,2]<stdout>:och[1,2]<stdout>: 3"}) == Lines{{2, "epoch 3"}});
}

TEST_CASE("another rank's chunk between the halves of a line goes to that rank", "[unit]") {
  CHECK(read({"[1,0]<stdout>:half[1,1]<stdout>:whole", "[1,0]<stdout>: done"}) ==
        Lines{{1, "whole"}, {0, "half done"}});
}

TEST_CASE("mpirun's own lines pass through untagged, and an unfinished line is flushed at the end", "[unit]") {
  CHECK(read({"mpirun noticed that process rank 1 exited", "[1,4]<stdout>:no newline[1,4]<stdout>:yet"}) ==
        Lines{{-1, "mpirun noticed that process rank 1 exited"}, {4, "no newlineyet"}});
}

TEST_CASE("text that only looks like a tag is kept", "[unit]") {
  CHECK(read({"[1,0]<stdout>:a [1,x]<stdout>: b [2,3]<other>:c"}) == Lines{{0, "a [1,x]<stdout>: b [2,3]<other>:c"}});
}

TEST_CASE("a rank's unfinished line is cut at the limit instead of growing without end", "[unit]") {
  std::string piece((size_t{1} << 20) / 2 + 1, 'x');
  // Three halves of the limit without a newline from rank 0, between rank 1's pieces.
  auto got = read({"[1,0]<stdout>:" + piece + "[1,1]<stdout>:a[1,0]<stdout>:" + piece + "[1,0]<stdout>:" + piece +
                   "[1,1]<stdout>:b"});
  REQUIRE(got.size() == 3);
  std::string all = piece + piece + piece;
  CHECK(got[0] == std::make_pair(0, all.substr(0, size_t{1} << 20)));  // cut at the limit
  CHECK(got[1] == std::make_pair(1, std::string("ab")));
  CHECK(got[2] == std::make_pair(0, all.substr(size_t{1} << 20)));  // the rest, at the end
}

TEST_CASE("the cut follows the reader's limit (--max-line-kb)", "[unit]") {
  std::string piece(600, 'y');
  auto got = read({"[1,0]<stdout>:" + piece + "[1,0]<stdout>:" + piece + "[1,0]<stdout>:z",
                    "[1,1]<stdout>:" + std::string(2500, 'w')},
                   1024);
  REQUIRE(got.size() == 5);
  CHECK(got[0] == std::make_pair(0, std::string(1024, 'y')));  // exactly 1 KiB, as LineSplitter cuts
  CHECK(got[1] == std::make_pair(0, std::string(176, 'y') + "z"));
  CHECK(got[2] == std::make_pair(1, std::string(1024, 'w')));  // a whole long piece is cut too
  CHECK(got[3] == std::make_pair(1, std::string(1024, 'w')));
  CHECK(got[4] == std::make_pair(1, std::string(452, 'w')));
}
