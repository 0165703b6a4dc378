// cli/launch/open_mpi_tags.cc
#include "cli/launch/open_mpi_tags.h"

#include <algorithm>
#include <array>

namespace hvd::cli {
namespace {

// A splitter's callback that gives its lines to onLine as `rank`'s.
auto ownedBy(int rank, const OpenMpiTagReader::OnLine& onLine) {
  return [rank, &onLine](std::string_view line, char end) { onLine(rank, line, end); };
}

constexpr std::array<std::string_view, 3> kStreams{"<stdout>:", "<stderr>:", "<stddiag>:"};
// Longer than any tag ("[" job "," rank "]" and the stream, the numbers of 10 digits at most).
constexpr size_t kLongestTag = 40;

// Digits at text[i...]; returns the index after them (i when there are none).
size_t skipDigits(std::string_view text, size_t i) {
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i;
}

// The tag that starts exactly at text[at], if one does.
OpenMpiTag tagAt(std::string_view text, size_t at) {
  if (at >= text.size() || text[at] != '[') return {};
  size_t comma = skipDigits(text, at + 1);
  if (comma == at + 1 || comma >= text.size() || text[comma] != ',') return {};
  size_t close = skipDigits(text, comma + 1);
  if (close == comma + 1 || close >= text.size() || text[close] != ']') return {};
  std::string_view rest = text.substr(close + 1);
  for (std::string_view stream : kStreams) {
    if (rest.substr(0, stream.size()) != stream) continue;
    int rank = 0;
    for (size_t i = comma + 1; i < close && rank < 100000000; ++i) rank = rank * 10 + (text[i] - '0');
    return {at, close + 1 + stream.size() - at, rank};
  }
  return {};
}

// Whether text (from a '[') is a tag cut short: "[", "[1", "[1,", "[1,0]", "[1,0]<std", ...
bool tagCutShort(std::string_view text) {
  size_t comma = skipDigits(text, 1);
  if (comma == text.size()) return true;
  if (comma == 1 || text[comma] != ',') return false;
  size_t close = skipDigits(text, comma + 1);
  if (close == text.size()) return true;
  if (close == comma + 1 || text[close] != ']') return false;
  std::string_view rest = text.substr(close + 1);
  for (std::string_view stream : kStreams) {
    if (rest.size() < stream.size() && stream.substr(0, rest.size()) == rest) return true;
  }
  return false;
}

// Where a tag that `text` ends in the middle of begins ("...[1,0]<std"); npos when its end
// cannot be the start of one.
size_t partialTagAt(std::string_view text) {
  const size_t from = text.size() > kLongestTag ? text.size() - kLongestTag : 0;
  for (size_t open = text.find('[', from); open != std::string_view::npos; open = text.find('[', open + 1)) {
    if (tagCutShort(text.substr(open))) return open;
  }
  return std::string_view::npos;
}

}  // namespace

OpenMpiTag findOpenMpiTag(std::string_view text, size_t from) {
  for (size_t open = text.find('[', from); open != std::string_view::npos; open = text.find('[', open + 1)) {
    if (OpenMpiTag tag = tagAt(text, open); tag.at != std::string_view::npos) return tag;
  }
  return {};
}

void OpenMpiTagReader::give(std::string_view text, const OnLine& onLine) {
  const int owner = current_;
  // A rank's bytes are cut as a forked rank's are; mpirun's own lines only at '\n' and the limit.
  auto [it, added] = lines_.try_emplace(owner, maxLine_, /*splitAtCarriageReturn=*/owner >= 0);
  it->second.feed(text, ownedBy(owner, onLine));
}

void OpenMpiTagReader::feed(std::string_view bytes, const OnLine& onLine) {
  std::string joined;
  std::string_view data = bytes;
  if (!carry_.empty()) {
    joined = std::move(carry_);
    carry_.clear();
    joined.append(bytes);
    data = joined;
  }
  size_t p = 0;
  while (p < data.size()) {
    if (atLineStart_) {
      if (OpenMpiTag tag = tagAt(data, p); tag.at == p) {
        current_ = tag.rank;
        p += tag.length;
        atLineStart_ = false;
        continue;
      }
      if (data[p] == '[' && tagCutShort(data.substr(p))) {  // the rest of it comes with the next read
        carry_ = data.substr(p);
        return;
      }
      current_ = -1;  // no tag at its start: mpirun's own line, whatever it holds
      atLineStart_ = false;
    }
    const size_t nl = data.find('\n', p);
    if (current_ < 0) {
      if (nl == std::string_view::npos) {
        give(data.substr(p), onLine);
        return;
      }
      give(data.substr(p, nl + 1 - p), onLine);
      p = nl + 1;
      atLineStart_ = true;
      continue;
    }
    // A rank's piece runs to the next tag or the end of mpirun's line.
    const size_t end = nl == std::string_view::npos ? data.size() : nl;
    if (OpenMpiTag next = findOpenMpiTag(data.substr(0, end), p); next.at != std::string_view::npos) {
      give(data.substr(p, next.at - p), onLine);
      current_ = next.rank;
      p = next.at + next.length;
      continue;
    }
    if (nl != std::string_view::npos) {
      give(data.substr(p, nl + 1 - p), onLine);
      p = nl + 1;
      atLineStart_ = true;
      continue;
    }
    // The read ends inside the piece, maybe in the middle of the next tag.
    const size_t cut = partialTagAt(data.substr(p));
    give(data.substr(p, cut == std::string_view::npos ? std::string_view::npos : cut), onLine);
    if (cut != std::string_view::npos) carry_ = data.substr(p + cut);
    return;
  }
}

void OpenMpiTagReader::finish(const OnLine& onLine) {
  // A tag cut short by the end of the output is text: mpirun's at a line's start, else the
  // piece's it ends.
  if (!carry_.empty()) {
    if (atLineStart_) current_ = -1;
    std::string rest = std::move(carry_);
    carry_.clear();
    give(rest, onLine);
  }
  for (auto& [rank, splitter] : lines_) {
    splitter.finish(ownedBy(rank, onLine));
  }
  lines_.clear();
  atLineStart_ = true;
  current_ = -1;
}

bool OpenMpiTagReader::holdsRedraw() const {
  return std::any_of(lines_.begin(), lines_.end(), [](const auto& entry) { return entry.second.holdsRedraw(); });
}

bool OpenMpiTagReader::holdsPiece() const {
  return std::any_of(lines_.begin(), lines_.end(), [](const auto& entry) { return entry.second.holdsPiece(); });
}

void OpenMpiTagReader::flushRedraw(const OnLine& onLine) {
  for (auto& [rank, splitter] : lines_) splitter.flushRedraw(ownedBy(rank, onLine));
}

void OpenMpiTagReader::flushPiece(const OnLine& onLine) {
  for (auto& [rank, splitter] : lines_) splitter.flushPiece(ownedBy(rank, onLine));
}

}  // namespace hvd::cli
