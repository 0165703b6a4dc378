// cli/launch/open_mpi_tags.h: whole lines per rank out of mpirun --tag-output. Open MPI
// tags each chunk a rank writes, not each line: a rank that writes "ok" and then "\n" (an
// unbuffered Python, a progress bar) comes out as "[1,0]<stdout>:ok[1,0]<stdout>:", and
// other ranks' chunks can come between the two halves. This reader splits mpirun's lines
// at every tag and joins each rank's pieces until that rank's newline.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "cli/launch/line_splitter.h"

namespace hvd::cli {

class OpenMpiTagReader {
 public:
  // A rank's unfinished line is cut at maxLine bytes, like LineSplitter's (--max-line-kb).
  explicit OpenMpiTagReader(size_t maxLine = LineSplitter::kDefaultMaxLine) : maxLine_(maxLine) {}

  // rank: the tagged rank, or -1 for a line of mpirun's own (no tag at its start).
  using OnLine = std::function<void(int rank, std::string_view line)>;

  // One line of mpirun's output (without its '\n'); calls onLine for each rank's line it completes.
  void feed(std::string_view line, const OnLine& onLine);
  // At end of stream: each rank's unfinished line is still a line.
  void finish(const OnLine& onLine);

 private:
  size_t maxLine_;
  std::map<int, std::string> pending_;  // rank -> the start of its unfinished line
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
