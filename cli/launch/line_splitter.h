// cli/launch/line_splitter.h: cuts a byte stream into whole lines. Bytes are held until
// their newline arrives, so a rank's line is printed once, whole, whatever the chunking.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace hvd::cli {

class LineSplitter {
 public:
  // A rank that writes without newlines (a binary dump, a progress bar with \r) must not
  // make hvdrun hold gigabytes: past maxLine bytes, a line is cut there.
  static constexpr size_t kDefaultMaxLine = size_t{1} << 20;
  explicit LineSplitter(size_t maxLine = kDefaultMaxLine) : maxLine_(maxLine) {}

  // Appends bytes and calls onLine(line) (without the '\n') for each line completed.
  template <typename OnLine>
  void feed(std::string_view bytes, OnLine&& onLine) {
    size_t start = 0;
    while (start < bytes.size()) {
      size_t nl = bytes.find('\n', start);
      if (nl == std::string_view::npos || pending_.size() + (nl - start) > maxLine_) {
        // No newline within the limit: keep what fits, and cut a full line off.
        size_t room = maxLine_ - pending_.size();
        size_t take = std::min(room, (nl == std::string_view::npos ? bytes.size() : nl) - start);
        pending_.append(bytes.substr(start, take));
        start += take;
        if (pending_.size() < maxLine_) return;
        onLine(std::string_view(pending_));
        pending_.clear();
        continue;
      }
      if (pending_.empty()) {
        onLine(bytes.substr(start, nl - start));
      } else {
        pending_.append(bytes.substr(start, nl - start));
        onLine(std::string_view(pending_));
        pending_.clear();
      }
      start = nl + 1;
    }
  }

  // At end of stream: a last line without a final newline is still a line.
  template <typename OnLine>
  void finish(OnLine&& onLine) {
    if (!pending_.empty()) {
      onLine(std::string_view(pending_));
      pending_.clear();
    }
  }

  size_t pendingBytes() const { return pending_.size(); }

 private:
  size_t maxLine_;
  std::string pending_;
};

}  // namespace hvd::cli
