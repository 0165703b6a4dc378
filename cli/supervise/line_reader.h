// cli/supervise/line_reader.h: one output stream of one supervised process, cut into whole
// lines and told whose each one is. The supervisor only reads bytes and hands them over; a
// launcher whose one process speaks for many ranks (srun --label, mpirun --tag-output, a
// host agent's prefix) gives the supervisor a reader of its own labels, so that no
// launcher's format is known below the launcher.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

namespace hvd::cli {

struct RankProcess;

class LineReader {
 public:
  // rank: whose line it is, or -1 for the process's own words (a launcher's, a host
  // agent's records); end: '\n', '\r' for a progress bar's redrawn piece, or
  // LineSplitter::kOpenEnd for the beginning of a line not ended yet (flushPiece).
  using OnLine = std::function<void(int rank, std::string_view line, char end)>;

  virtual ~LineReader() = default;
  // Bytes as read, in any pieces; calls onLine for each line completed.
  virtual void feed(std::string_view bytes, const OnLine& onLine) = 0;
  // At the end of the stream: what is left of a line is still a line.
  virtual void finish(const OnLine& onLine) = 0;
  // A piece held for an end that has not come, which the supervisor gives out once the
  // stream has been quiet a moment: a progress bar's redraw begun, and with openLines a
  // line begun (a prompt), where the reader knows whose the rest of the line is.
  virtual bool holdsPiece(bool openLines) const = 0;
  virtual void flushPiece(bool openLines, const OnLine& onLine) = 0;
};

// Makes the reader of a process's stdout (isErr false) or stderr; maxLine: where a line
// that never ends is cut (--max-line-kb).
using LineReaderFactory =
    std::function<std::unique_ptr<LineReader>(const RankProcess& process, bool isErr, size_t maxLine)>;

// A rank's own stream: every line is the rank's, cut at '\n', at a progress bar's '\r'
// and at maxLine; a line begun can be given out open.
std::unique_ptr<LineReader> rankLineReader(int rank, size_t maxLine);

// A stream of lines each labelled with whose it is (srun --label, a host agent's prefix):
// `label` strips the label from a line and returns its rank, or -1 for the process's own
// words. Cut at '\n' and maxLine (and at '\r' with splitAtCarriageReturn); a line begun is
// never given out open, since the rest of it may be another rank's.
using LineLabel = std::function<int(std::string_view& line)>;
std::unique_ptr<LineReader> labelledLineReader(LineLabel label, size_t maxLine, bool splitAtCarriageReturn);

}  // namespace hvd::cli
