// runtime/common/json.cc: recursive descent over RFC 8259.
#include "runtime/common/json.h"

#include "runtime/common/regular_file.h"

#include <cstdlib>
#include <stdexcept>

namespace hvd {
namespace {

struct Parser {
  const std::string& s;
  size_t i = 0;
  int depth = 0;  // arrays and objects open around the value at hand
  [[noreturn]] void fail(const std::string& what) { throw std::runtime_error("offset " + std::to_string(i) + ": " + what); }
  void space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  void expect(char c) {
    space();
    if (i >= s.size() || s[i] != c) fail(std::string("expected '") + c + "'");
    ++i;
  }
  Json value() {
    space();
    if (i >= s.size()) fail("unexpected end");
    char c = s[i];
    if (c == '{' || c == '[') {
      if (depth == kMaxJsonDepth) fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      ++depth;
      Json nested = c == '{' ? object() : array();
      --depth;
      return nested;
    }
    if (c == '"') return Json{string()};
    if (s.compare(i, 4, "true") == 0) return i += 4, Json{true};
    if (s.compare(i, 5, "false") == 0) return i += 5, Json{false};
    if (s.compare(i, 4, "null") == 0) return i += 4, Json{nullptr};
    return Json{number()};
  }
  Json object() {
    expect('{');
    Json::Object o;
    space();
    if (i < s.size() && s[i] == '}') return ++i, Json{o};
    while (true) {
      space();
      std::string key = string();
      expect(':');
      o[key] = value();
      space();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      expect('}');
      return Json{o};
    }
  }
  Json array() {
    expect('[');
    Json::Array a;
    space();
    if (i < s.size() && s[i] == ']') return ++i, Json{a};
    while (true) {
      a.push_back(value());
      space();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      expect(']');
      return Json{a};
    }
  }
  std::string string() {
    if (i >= s.size() || s[i] != '"') fail("expected a string");
    ++i;
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      char c = s[i++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      char e = s[i++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          if (i + 4 > s.size()) fail("short \\u escape");
          out += static_cast<char>(std::strtol(s.substr(i, 4).c_str(), nullptr, 16));
          i += 4;
          break;
        default: fail("bad escape");
      }
    }
  }
  double number() {
    size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                            s[i] == '+' || s[i] == '-'))
      ++i;
    if (start == i) fail("unexpected character");
    char* end = nullptr;
    std::string text = s.substr(start, i - start);
    double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) fail("bad number '" + text + "'");
    return v;
  }
};

}  // namespace

Result<Json> parseJson(const std::string& text) {
  Parser p{text};
  try {
    // Straight into the Result: a named Json moved into it made GCC 12 warn of a variant
    // read uninitialized (-Wmaybe-uninitialized, a false alarm, pages of it).
    Result<Json> document = p.value();
    p.space();
    if (p.i != text.size()) p.fail("text after the document");
    return document;
  } catch (const std::exception& e) {
    return invalidArgument(e.what());
  }
}

Result<Json> readJsonFile(const std::string& path) {
  auto fd = openRegularFile(path);
  if (!fd) return fd.status();
  auto text = readWhole(*fd, path);
  if (!text) return text.status();
  auto json = parseJson(*text);
  if (!json) return json.status().withContext("'" + path + "' is not valid JSON");
  return json;
}

}  // namespace hvd
