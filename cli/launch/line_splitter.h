// cli/launch/line_splitter.h: cuts a byte stream into whole lines. Bytes are held until
// their newline arrives, so a rank's line is printed once, whole, whatever the chunking.
#pragma once

#include <string>
#include <string_view>

namespace hvd::cli {

class LineSplitter {
 public:
  // Appends bytes and calls onLine(line) (without the '\n') for each line completed.
  template <typename OnLine>
  void feed(std::string_view bytes, OnLine&& onLine) {
    size_t start = 0;
    while (start < bytes.size()) {
      size_t nl = bytes.find('\n', start);
      if (nl == std::string_view::npos) {
        pending_.append(bytes.substr(start));
        return;
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
  std::string pending_;
};

}  // namespace hvd::cli
