// cli/supervise/line_reader.cc: the readers of a rank's own stream and of a labelled one.
#include "cli/supervise/line_reader.h"

#include "cli/supervise/line_splitter.h"

#include <utility>

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

class LabelledLines final : public LineReader {
 public:
  LabelledLines(LineLabel label, size_t maxLine, bool splitAtCarriageReturn)
      : label_(std::move(label)), splitter_(maxLine, splitAtCarriageReturn) {}

  void feed(std::string_view bytes, const OnLine& onLine) override {
    splitter_.feed(bytes, [&](std::string_view line, char end) { give(line, end, onLine); });
  }
  void finish(const OnLine& onLine) override {
    splitter_.finish([&](std::string_view line, char end) { give(line, end, onLine); });
  }
  bool holdsPiece(bool) const override { return splitter_.holdsRedraw(); }
  void flushPiece(bool, const OnLine& onLine) override {
    splitter_.flushRedraw([&](std::string_view line, char end) { give(line, end, onLine); });
  }

 private:
  void give(std::string_view line, char end, const OnLine& onLine) const {
    int rank = label_(line);
    onLine(rank, line, end);
  }

  LineLabel label_;
  LineSplitter splitter_;
};

}  // namespace

std::unique_ptr<LineReader> rankLineReader(int rank, size_t maxLine) {
  return std::make_unique<RankLines>(rank, maxLine);
}

std::unique_ptr<LineReader> labelledLineReader(LineLabel label, size_t maxLine, bool splitAtCarriageReturn) {
  return std::make_unique<LabelledLines>(std::move(label), maxLine, splitAtCarriageReturn);
}

}  // namespace hvd::cli
