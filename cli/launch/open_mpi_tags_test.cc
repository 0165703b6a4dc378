// cli/launch/open_mpi_tags_test.cc: each rank's lines come out whole from mpirun's
// chunk-tagged output.
#include "cli/launch/open_mpi_tags.h"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

using hvd::cli::OpenMpiTagReader;

namespace {

using Lines = std::vector<std::pair<int, std::string>>;

// mpirun's output lines, each followed by its '\n', fed in reads of `chunk` bytes (0: all at
// once); the lines each rank gets, without their ends.
Lines read(const std::vector<std::string>& lines, size_t maxLine = size_t{1} << 20, size_t chunk = 0) {
  std::string stream;
  for (const auto& line : lines) stream += line + "\n";
  OpenMpiTagReader reader(maxLine);
  Lines got;
  auto onLine = [&](int rank, std::string_view line, char) { got.emplace_back(rank, std::string(line)); };
  if (chunk == 0) chunk = std::max<size_t>(stream.size(), 1);
  for (size_t at = 0; at < stream.size(); at += chunk) reader.feed(std::string_view(stream).substr(at, chunk), onLine);
  reader.finish(onLine);
  return got;
}

// The same in reads of 1, 7 and all bytes: a read may end anywhere, in a tag too.
Lines readAnyhow(const std::vector<std::string>& lines, size_t maxLine = size_t{1} << 20) {
  Lines whole = read(lines, maxLine);
  for (size_t chunk : {1, 7}) {
    INFO("reads of " << chunk << " bytes");
    CHECK(read(lines, maxLine, chunk) == whole);
  }
  return whole;
}

}  // namespace

TEST_CASE("a tagged line is the rank's line without the tag", "[unit]") {
  CHECK(readAnyhow({"[1,3]<stdout>:hello", "[1,0]<stderr>:oops"}) == Lines{{3, "hello"}, {0, "oops"}});
}

TEST_CASE("a rank's line written in two chunks comes out once, whole", "[unit]") {
  CHECK(readAnyhow({"[1,0]<stdout>:ok[1,0]<stdout>:"}) == Lines{{0, "ok"}});
  CHECK(readAnyhow({"[1,2]<stdout>:ep[1,2]<stdout>:och[1,2]<stdout>: 3"}) == Lines{{2, "epoch 3"}});
}

TEST_CASE("another rank's chunk between the halves of a line goes to that rank", "[unit]") {
  CHECK(readAnyhow({"[1,0]<stdout>:half[1,1]<stdout>:whole", "[1,0]<stdout>: done"}) ==
        Lines{{1, "whole"}, {0, "half done"}});
}

TEST_CASE("mpirun's own lines pass through untagged, and an unfinished line is flushed at the end", "[unit]") {
  CHECK(readAnyhow({"mpirun noticed that process rank 1 exited", "[1,4]<stdout>:no newline[1,4]<stdout>:yet"}) ==
        Lines{{-1, "mpirun noticed that process rank 1 exited"}, {4, "no newlineyet"}});
}

TEST_CASE("text that only looks like a tag is kept", "[unit]") {
  CHECK(readAnyhow({"[1,0]<stdout>:a [1,x]<stdout>: b [2,3]<other>:c"}) == Lines{{0, "a [1,x]<stdout>: b [2,3]<other>:c"}});
}

TEST_CASE("a rank's unfinished line is cut at the limit instead of growing without end", "[unit]") {
  std::string piece((size_t{1} << 20) / 2 + 1, 'x');
  // Three halves of the limit without a newline from rank 0, between rank 1's pieces.
  auto got = readAnyhow({"[1,0]<stdout>:" + piece + "[1,1]<stdout>:a[1,0]<stdout>:" + piece + "[1,0]<stdout>:" + piece +
                   "[1,1]<stdout>:b"});
  REQUIRE(got.size() == 3);
  std::string all = piece + piece + piece;
  CHECK(got[0] == std::make_pair(0, all.substr(0, size_t{1} << 20)));  // cut at the limit
  CHECK(got[1] == std::make_pair(1, std::string("ab")));
  CHECK(got[2] == std::make_pair(0, all.substr(size_t{1} << 20)));  // the rest, at the end
}

TEST_CASE("the cut follows the reader's limit (--max-line-kb)", "[unit]") {
  std::string piece(600, 'y');
  auto got = readAnyhow({"[1,0]<stdout>:" + piece + "[1,0]<stdout>:" + piece + "[1,0]<stdout>:z",
                    "[1,1]<stdout>:" + std::string(2500, 'w')},
                   1024);
  REQUIRE(got.size() == 5);
  CHECK(got[0] == std::make_pair(0, std::string(1024, 'y')));  // exactly 1 KiB, as LineSplitter cuts
  CHECK(got[1] == std::make_pair(0, std::string(176, 'y') + "z"));
  CHECK(got[2] == std::make_pair(1, std::string(1024, 'w')));  // a whole long piece is cut too
  CHECK(got[3] == std::make_pair(1, std::string(1024, 'w')));
  CHECK(got[4] == std::make_pair(1, std::string(452, 'w')));
}

TEST_CASE("a progress bar a rank redraws with carriage returns comes out piece by piece as from a rank hvdrun forks",
          "[unit]") {
  OpenMpiTagReader reader;
  std::vector<std::tuple<int, std::string, char>> got;
  auto onLine = [&](int rank, std::string_view line, char end) { got.emplace_back(rank, std::string(line), end); };
  reader.feed("[1,0]<stdout>:\r 1%[1,1]<stdout>:hi\n[1,0]<stdout>:\r 2%[1,0]<stdout>:\r 3%\n", onLine);
  reader.finish(onLine);
  using Piece = std::tuple<int, std::string, char>;
  CHECK(got == std::vector<Piece>{{0, "", '\r'}, {1, "hi", '\n'}, {0, " 1%", '\r'}, {0, " 2%", '\r'}, {0, " 3%", '\n'}});
}

TEST_CASE("a progress bar of megabytes without a newline is never read as mpirun's own words", "[unit]") {
  // 60,000 redraws of 88 bytes, each its own tagged chunk (tqdm through mpirun over an epoch):
  // 6 MB of mpirun's output without a newline. Read as lines, it was cut at the raw cap and
  // the rest printed untagged, as mpirun's.
  std::string stream;
  for (int i = 0; i < 60000; ++i) stream += "[1,0]<stdout>:\r" + std::to_string(100000 + i) + std::string(80, 'x');
  stream += "[1,0]<stdout>:\n[1,0]<stdout>:done\n";  // mpirun tags each line of a chunk
  OpenMpiTagReader reader;
  size_t pieces = 0, bytes = 0, untagged = 0;
  std::string last;
  auto onLine = [&](int rank, std::string_view line, char) {
    untagged += rank != 0;
    bytes += line.size();
    ++pieces;
    last = line;
  };
  for (size_t at = 0; at < stream.size(); at += 65536) reader.feed(std::string_view(stream).substr(at, 65536), onLine);
  reader.finish(onLine);
  CHECK(untagged == 0);
  CHECK(pieces == 60000 + 2);  // the empty piece before the first '\r', each redraw, and "done"
  CHECK(bytes == 60000 * 86 + 4);
  CHECK(last == "done");
}

TEST_CASE("mpirun's own lines stay its own whatever tags they hold and whatever the reads", "[unit]") {
  CHECK(readAnyhow({"--------", "Process name: [[311,1],3] [1,2]<stdout>: not a piece", "[1,2]<stdout>:mine"}) ==
        Lines{{-1, "--------"}, {-1, "Process name: [[311,1],3] [1,2]<stdout>: not a piece"}, {2, "mine"}});
  // A line that starts like a tag but is not one.
  CHECK(readAnyhow({"[1,2]<stdin>:no", "[12"}) == Lines{{-1, "[1,2]<stdin>:no"}, {-1, "[12"}});
  // Output that ends without a newline (mpirun killed): each rank's rest is still a line, and
  // a tag cut short at the very end is text: the rank's inside its piece, mpirun's at a line's start.
  OpenMpiTagReader reader;
  Lines got;
  auto onLine = [&](int rank, std::string_view line, char) { got.emplace_back(rank, std::string(line)); };
  reader.feed("[1,4]<stdout>:tail[1,5]<stdout>:end[1,", onLine);
  reader.finish(onLine);
  CHECK(got == Lines{{4, "tail"}, {5, "end[1,"}});
  got.clear();
  reader.feed("[1,4]<stdout>:x\n[1,", onLine);
  reader.finish(onLine);
  CHECK(got == Lines{{4, "x"}, {-1, "[1,"}});
}

TEST_CASE("a rank's prompt in mpirun's output can be given out open and the rest of its line follows", "[unit]") {
  OpenMpiTagReader reader;
  std::vector<std::tuple<int, std::string, char>> got;
  auto onLine = [&](int rank, std::string_view line, char end) { got.emplace_back(rank, std::string(line), end); };
  reader.feed("[1,1]<stdout>:(Pdb) ", onLine);
  CHECK(reader.holdsPiece());
  CHECK_FALSE(reader.holdsRedraw());
  reader.flushPiece(onLine);
  CHECK_FALSE(reader.holdsPiece());
  reader.feed("[1,1]<stdout>:42\n", onLine);
  CHECK(got == std::vector<std::tuple<int, std::string, char>>{{1, "(Pdb) ", hvd::cli::LineSplitter::kOpenEnd},
                                                                {1, "42", '\n'}});
}
