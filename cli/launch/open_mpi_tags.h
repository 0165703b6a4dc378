// cli/launch/open_mpi_tags.h: whole lines per rank out of mpirun --tag-output. Open MPI
// tags each chunk a rank writes, not each line: a rank that writes "ok" and then "\n" (an
// unbuffered Python, a progress bar) comes out as "[1,0]<stdout>:ok[1,0]<stdout>:\n", and
// other ranks' chunks can come between the two halves. This reader takes mpirun's output as
// it is read, finds the tags in it, and cuts each rank's bytes into lines as a rank hvdrun
// forks is cut (LineSplitter: at '\n', at a progress bar's '\r', at the --max-line-kb limit).
// Read in lines first, a progress bar redrawn for an epoch made one raw line of megabytes,
// and past a cap its rest lost its tags and was printed as mpirun's own words.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "cli/supervise/line_splitter.h"

namespace hvd::cli {

class OpenMpiTagReader {
 public:
  // A rank's unfinished line is cut at maxLine bytes, like LineSplitter's (--max-line-kb).
  explicit OpenMpiTagReader(size_t maxLine = LineSplitter::kDefaultMaxLine) : maxLine_(maxLine) {}

  // rank: the tagged rank, or -1 for a line of mpirun's own (no tag at its start); end: '\n',
  // '\r' for a progress bar's redrawn piece, or LineSplitter::kOpenEnd (flushPiece).
  using OnLine = std::function<void(int rank, std::string_view line, char end)>;

  // Bytes of mpirun's output as read, in any pieces; calls onLine for each line completed.
  void feed(std::string_view bytes, const OnLine& onLine);
  // At end of stream: what is left of each line is still a line.
  void finish(const OnLine& onLine);
  // A rank's progress bar redraw has begun and is held (LineSplitter::holdsRedraw); the
  // caller flushes it once the stream has been quiet a moment.
  bool holdsRedraw() const;
  void flushRedraw(const OnLine& onLine);
  // The same for any rank's line begun and not ended (LineSplitter::holdsPiece): a prompt.
  bool holdsPiece() const;
  void flushPiece(const OnLine& onLine);

 private:
  // Feeds `text` to the current line's owner.
  void give(std::string_view text, const OnLine& onLine);

  size_t maxLine_;
  std::string carry_;       // the end of the last read, which may be the start of a tag
  bool atLineStart_ = true;  // the next byte begins one of mpirun's lines
  int current_ = -1;         // whose bytes these are: a rank, or -1 for mpirun's own line
  std::map<int, LineSplitter> lines_;  // each rank's (and mpirun's, -1) lines being cut
};

// Where the next Open MPI tag "[job,rank]<stdout>:" ("<stderr>:", "<stddiag>:") starts in
// text at or after `from`, its length and rank; npos when there is none.
struct OpenMpiTag {
  size_t at = std::string_view::npos;
  size_t length = 0;
  int rank = -1;
};
OpenMpiTag findOpenMpiTag(std::string_view text, size_t from = 0);

}  // namespace hvd::cli
