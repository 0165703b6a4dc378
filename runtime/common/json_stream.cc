// runtime/common/json_stream.cc: a byte-at-a-time splitter over the array's top level; each
// element's text goes to parseJson whole, so the element grammar is json.cc's alone.
#include "runtime/common/json_stream.h"

#include <errno.h>
#include <unistd.h>

#include <vector>

#include "runtime/common/regular_file.h"

namespace hvd {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

Status at(size_t offset, const std::string& what) { return invalidArgument("offset " + std::to_string(offset) + ": " + what); }

// Where the splitter is in the array.
enum class Place { kBeforeArray, kFirst, kAfterComma, kElement, kAfterElement, kDone };

}  // namespace

Status forEachArrayElement(const std::string& path, const std::function<Status(Json)>& each, size_t maxElementBytes) {
  auto file = openRegularFile(path);
  if (!file) return file.status();
  std::vector<char> buf(1 << 20);
  Place place = Place::kBeforeArray;
  std::string element;
  size_t elementStart = 0;
  int depth = 0;              // open brackets and braces inside the element
  bool inString = false, escaped = false;
  bool bare = false;          // a number, true, false or null: ends at white space, ',' or ']'
  size_t offset = 0;          // of the byte at hand, in the file

  auto emit = [&]() -> Status {
    auto json = parseJson(element);
    if (!json) return invalidArgument("the element at offset " + std::to_string(elementStart) + ": " + json.status().message());
    element.clear();
    return each(std::move(*json));
  };

  for (;;) {
    ssize_t n = ::read(file->get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return systemError("cannot read '" + path + "'");
    if (n == 0) break;
    for (ssize_t k = 0; k < n; ++k, ++offset) {
      const char c = buf[static_cast<size_t>(k)];
      if (place == Place::kElement) {
        if (bare && (isSpace(c) || c == ',' || c == ']')) {
          if (Status s = emit(); !s.isOk()) return s;
          place = Place::kAfterElement;  // and this byte is read there, below
        } else {
          if (element.size() >= maxElementBytes) {
            return at(elementStart, "an element of more than " + std::to_string(maxElementBytes) + " bytes");
          }
          element += c;
          if (bare) continue;
          if (inString) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') inString = false;
          } else if (c == '"') {
            inString = true;
          } else if (c == '{' || c == '[') {
            ++depth;
          } else if (c == '}' || c == ']') {
            --depth;
          }
          if (depth == 0 && !inString) {
            if (Status s = emit(); !s.isOk()) return s;
            place = Place::kAfterElement;
          }
          continue;
        }
      }
      if (isSpace(c)) continue;
      switch (place) {
        case Place::kBeforeArray:
          if (c != '[') return at(offset, "expected '['");
          place = Place::kFirst;
          break;
        case Place::kFirst:
        case Place::kAfterComma:
          if (c == ']' && place == Place::kFirst) {
            place = Place::kDone;
            break;
          }
          if (c == ']' || c == ',') return at(offset, "unexpected character");
          place = Place::kElement;
          elementStart = offset;
          element.assign(1, c);
          depth = (c == '{' || c == '[') ? 1 : 0;
          inString = c == '"';
          escaped = false;
          bare = !inString && depth == 0;
          break;
        case Place::kAfterElement:
          if (c == ',') place = Place::kAfterComma;
          else if (c == ']') place = Place::kDone;
          else return at(offset, "expected ',' or ']'");
          break;
        case Place::kDone: return at(offset, "text after the array");
        case Place::kElement: break;  // handled above
      }
    }
  }
  if (place == Place::kElement && bare) {
    if (Status s = emit(); !s.isOk()) return s;
  }
  if (place != Place::kDone) return at(offset, "unexpected end");
  return Status::ok();
}

}  // namespace hvd
