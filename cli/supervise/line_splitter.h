// cli/supervise/line_splitter.h: cuts a byte stream into whole lines. Bytes are held until
// their newline arrives, so a rank's line is printed once, whole, whatever the chunking.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace hvd::cli {

class LineSplitter {
 public:
  // A rank that writes without newlines (a binary dump) must not make hvdrun hold
  // gigabytes: past maxLine bytes, a line is cut there.
  static constexpr size_t kDefaultMaxLine = size_t{1} << 20;

  // splitAtCarriageReturn: a '\r' not followed by '\n' also ends a piece, reported with
  // '\r' as its end: a progress bar (tqdm) redraws its line with '\r' and no '\n' until
  // it is done, and would show nothing until then (horovodrun flushes there too). "\r\n"
  // stays one line end, the '\r' part of the line, as before.
  explicit LineSplitter(size_t maxLine = kDefaultMaxLine, bool splitAtCarriageReturn = false)
      : maxLine_(maxLine), splitAtCarriageReturn_(splitAtCarriageReturn) {}

  // Appends bytes and calls onLine(line, end) (or onLine(line)) for each line completed,
  // without its end: '\n', or '\r' for a redrawn piece (splitAtCarriageReturn); a line cut
  // at the limit ends in '\n'. After flushPiece gave a line's beginning (kOpenEnd), the
  // next piece is the rest of that line.
  template <typename OnLine>
  void feed(std::string_view bytes, OnLine&& onLine) {
    size_t start = 0;
    // A '\r' that ended the last chunk: a redraw, unless this chunk starts with its '\n'.
    if (!bytes.empty() && !pending_.empty() && pending_.back() == '\r' && splitAtCarriageReturn_ && bytes[0] != '\n') {
      pending_.pop_back();
      deliver(onLine, std::string_view(pending_), '\r');
      pending_.clear();
    }
    while (start < bytes.size()) {
      size_t nl = bytes.find('\n', start);
      size_t end = nl == std::string_view::npos ? bytes.size() : nl;
      if (splitAtCarriageReturn_) {
        // The first '\r' before that newline that is not its CRLF.
        const char* from = bytes.data() + start;
        while (const void* found = std::memchr(from, '\r', static_cast<size_t>(bytes.data() + end - from))) {
          size_t cr = static_cast<size_t>(static_cast<const char*>(found) - bytes.data());
          if (cr + 1 == nl) break;                 // CRLF: the newline ends this line
          if (cr + 1 == bytes.size()) break;       // the chunk's last byte: wait for the next
          if (pending_.size() + (cr - start) > maxLine_) break;  // the cut below comes first
          pending_.append(bytes.substr(start, cr - start));
          deliver(onLine, std::string_view(pending_), '\r');
          pending_.clear();
          start = cr + 1;
          from = bytes.data() + start;
        }
      }
      if (nl == std::string_view::npos || pending_.size() + (nl - start) > maxLine_) {
        // No newline within the limit: keep what fits, and cut a full line off.
        size_t room = maxLine_ - pending_.size();
        size_t take = std::min(room, end - start);
        pending_.append(bytes.substr(start, take));
        start += take;
        if (pending_.size() < maxLine_) return;
        deliver(onLine, std::string_view(pending_), '\n');
        pending_.clear();
        continue;
      }
      if (pending_.empty()) {
        deliver(onLine, bytes.substr(start, nl - start), '\n');
      } else {
        pending_.append(bytes.substr(start, nl - start));
        deliver(onLine, std::string_view(pending_), '\n');
        pending_.clear();
      }
      start = nl + 1;
    }
  }

  // At end of stream: a last line without a final newline is still a line.
  template <typename OnLine>
  void finish(OnLine&& onLine) {
    if (!pending_.empty()) {
      bool redraw = splitAtCarriageReturn_ && pending_.back() == '\r';
      if (redraw) pending_.pop_back();
      deliver(onLine, std::string_view(pending_), redraw ? '\r' : '\n');
      pending_.clear();
    }
  }

  size_t pendingBytes() const { return pending_.size(); }

  // A redraw has begun (after a '\r' piece) and not ended yet: a bar that redraws slowly
  // would otherwise show its last state only when the next one begins. The caller flushes
  // it once the stream has been quiet a moment; a line that ends later is then one piece
  // shorter, which a terminal shows the same.
  bool holdsRedraw() const { return afterRedraw_ && !pending_.empty() && pending_.back() != '\r'; }

  template <typename OnLine>
  void flushRedraw(OnLine&& onLine) {
    if (!holdsRedraw()) return;
    deliver(onLine, std::string_view(pending_), '\r');
    pending_.clear();
  }

  // The end of a piece flushPiece gives out of a line not ended yet: the rest of that line
  // comes as the next piece.
  static constexpr char kOpenEnd = '\0';

  // Bytes held for an end that has not come: a redraw begun (holdsRedraw), or a line begun
  // without its newline, a prompt above all ("name? ", pdb's "(Pdb) "), which a rank then
  // waits at and which would show only after the user had answered it. A '\r' last byte
  // is still waiting for its next to tell a redraw from a CRLF.
  bool holdsPiece() const { return !pending_.empty() && pending_.back() != '\r'; }

  // Gives what holdsPiece holds: a redraw with '\r', a line's beginning with kOpenEnd.
  template <typename OnLine>
  void flushPiece(OnLine&& onLine) {
    if (!holdsPiece()) return;
    deliver(onLine, std::string_view(pending_), afterRedraw_ ? '\r' : kOpenEnd);
    pending_.clear();
  }

 private:
  template <typename OnLine>
  void deliver(OnLine& onLine, std::string_view line, char end) {
    afterRedraw_ = end == '\r';
    if constexpr (std::is_invocable_v<OnLine&, std::string_view, char>) {
      onLine(line, end);
    } else {
      onLine(line);
    }
  }

  size_t maxLine_;
  bool splitAtCarriageReturn_;
  bool afterRedraw_ = false;  // the last piece delivered ended with '\r'
  std::string pending_;
};

}  // namespace hvd::cli
