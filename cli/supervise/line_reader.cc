// cli/supervise/line_reader.cc: the reader of a rank's own stream.
#include "cli/supervise/line_reader.h"

#include "cli/supervise/line_splitter.h"

namespace hvd::cli {
namespace {

class RankLines final : public LineReader {
 public:
  RankLines(int rank, size_t maxLine) : rank_(rank), splitter_(maxLine, /*splitAtCarriageReturn=*/true) {}

  void feed(std::string_view bytes, const OnLine& onLine) override {
    splitter_.feed(bytes, [&](std::string_view line, char end) { onLine(rank_, line, end); });
  }
  void finish(const OnLine& onLine) override {
    splitter_.finish([&](std::string_view line, char end) { onLine(rank_, line, end); });
  }
  bool holdsPiece(bool openLines) const override {
    return openLines ? splitter_.holdsPiece() : splitter_.holdsRedraw();
  }
  void flushPiece(bool openLines, const OnLine& onLine) override {
    auto give = [&](std::string_view line, char end) { onLine(rank_, line, end); };
    if (openLines) {
      splitter_.flushPiece(give);
    } else {
      splitter_.flushRedraw(give);
    }
  }

 private:
  int rank_;
  LineSplitter splitter_;
};

}  // namespace

std::unique_ptr<LineReader> rankLineReader(int rank, size_t maxLine) {
  return std::make_unique<RankLines>(rank, maxLine);
}

}  // namespace hvd::cli
