#include "cli/launch/open_mpi_tags.h"

#include <array>

namespace hvd::cli {
namespace {

// Digits at text[i...]; returns the index after them (i when there are none).
size_t skipDigits(std::string_view text, size_t i) {
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i;
}

}  // namespace

OpenMpiTag findOpenMpiTag(std::string_view text, size_t from) {
  static constexpr std::array<std::string_view, 3> kStreams{"<stdout>:", "<stderr>:", "<stddiag>:"};
  for (size_t open = text.find('[', from); open != std::string_view::npos; open = text.find('[', open + 1)) {
    size_t comma = skipDigits(text, open + 1);
    if (comma == open + 1 || comma >= text.size() || text[comma] != ',') continue;
    size_t close = skipDigits(text, comma + 1);
    if (close == comma + 1 || close >= text.size() || text[close] != ']') continue;
    std::string_view rest = text.substr(close + 1);
    for (std::string_view stream : kStreams) {
      if (rest.substr(0, stream.size()) != stream) continue;
      int rank = 0;
      for (size_t i = comma + 1; i < close && rank < 100000000; ++i) rank = rank * 10 + (text[i] - '0');
      return {open, close + 1 + stream.size() - open, rank};
    }
  }
  return {};
}

void OpenMpiTagReader::feed(std::string_view line, const OnLine& onLine) {
  OpenMpiTag tag = findOpenMpiTag(line);
  if (tag.at != 0) {  // mpirun's own words
    onLine(-1, line);
    return;
  }
  // Whole lines of maxLine_ bytes go out as they fill, as LineSplitter cuts a rank's own
  // stream: the same output for one rank whichever launcher ran it.
  auto cutFull = [&](int rank, std::string& text) {
    size_t at = 0;
    for (; text.size() - at >= maxLine_; at += maxLine_) onLine(rank, std::string_view(text).substr(at, maxLine_));
    text.erase(0, at);
  };
  for (;;) {
    size_t start = tag.at + tag.length;
    OpenMpiTag next = findOpenMpiTag(line, start);
    if (next.at == std::string_view::npos) {  // the newline after this piece ends the rank's line
      auto it = pending_.find(tag.rank);
      if (it == pending_.end() && line.size() - start <= maxLine_) {
        onLine(tag.rank, line.substr(start));
      } else {
        std::string whole = it == pending_.end() ? std::string() : std::move(it->second);
        if (it != pending_.end()) pending_.erase(it);
        whole.append(line.substr(start));
        cutFull(tag.rank, whole);
        if (!whole.empty()) onLine(tag.rank, whole);
      }
      return;
    }
    std::string& pending = pending_[tag.rank];
    pending.append(line.substr(start, next.at - start));
    cutFull(tag.rank, pending);
    tag = next;
  }
}

void OpenMpiTagReader::finish(const OnLine& onLine) {
  for (auto& [rank, text] : pending_) onLine(rank, text);
  pending_.clear();
}

}  // namespace hvd::cli
