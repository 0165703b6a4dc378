// runtime/common/json.cc: nlohmann/json's parser (RFC 8259, strict: \u escapes to UTF-8 with
// surrogate pairs, no leading zeros, no trailing commas) driving a SAX handler that builds
// our Json tree. Only this file includes nlohmann's header (about 4 s of compile time per
// file that does), and the tree stays the small variant the callers already walk.
#include "runtime/common/json.h"

#include <nlohmann/json.hpp>

#include <string_view>

#include "runtime/common/regular_file.h"

namespace hvd {
namespace {

// Where the nesting first goes past `limit`: the offset of the bracket or brace that opens
// level limit + 1, outside strings. Only called once a document was found too deep.
size_t offsetPastDepth(const std::string& text, int limit) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') inString = true;
    if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    }
    if (c == ']' || c == '}') --depth;
  }
  return text.size();
}

// Builds the tree: open arrays and objects on a stack, each value put into the innermost.
class TreeBuilder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  // Traces nest four levels: room for them up front spares a reallocation per level, which
  // showed when a trace is parsed element by element (json_stream.cc).
  TreeBuilder() {
    open_.reserve(8);
    keys_.reserve(8);
  }
  bool null() override { return put(Json{nullptr}); }
  bool boolean(bool value) override { return put(Json{value}); }
  bool number_integer(number_integer_t value) override { return put(Json{static_cast<double>(value)}); }
  bool number_unsigned(number_unsigned_t value) override { return put(Json{static_cast<double>(value)}); }
  bool number_float(number_float_t value, const string_t&) override { return put(Json{value}); }
  bool string(string_t& value) override { return put(Json{std::move(value)}); }
  bool binary(binary_t&) override { return false; }  // not produced by the text parser
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& name) override {
    keys_.back() = std::move(name);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) override {
    // nlohmann's position counts bytes read, the failing one included; ours is its offset.
    errorOffset_ = position > 0 ? position - 1 : 0;
    std::string_view what = error.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 7: syntax error while
    // parsing value - invalid literal; last read: 'tru}'": keep what follows the place.
    size_t colon = what.find(": ");
    error_ = std::string(colon == std::string_view::npos ? what : what.substr(colon + 2));
    return false;
  }

  bool tooDeep() const { return tooDeep_; }
  size_t errorOffset() const { return errorOffset_; }
  const std::string& error() const { return error_; }
  Json takeRoot() { return std::move(root_); }

 private:
  bool put(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
    } else if (auto* array = std::get_if<Json::Array>(&open_.back().value)) {
      array->push_back(std::move(value));
    } else {
      std::get<Json::Object>(open_.back().value)[std::move(keys_.back())] = std::move(value);
    }
    return true;
  }
  bool open(bool object) {
    if (open_.size() == static_cast<size_t>(kMaxJsonDepth)) {
      tooDeep_ = true;
      return false;
    }
    // Emplaced in place: a Json temporary moved in makes GCC 12 warn of a variant read
    // uninitialized (-Wmaybe-uninitialized, a false alarm).
    Json& container = open_.emplace_back();
    if (object) {
      container.value.emplace<Json::Object>();
    } else {
      container.value.emplace<Json::Array>();
    }
    keys_.emplace_back();
    return true;
  }
  bool close() {
    Json done = std::move(open_.back());
    open_.pop_back();
    keys_.pop_back();
    return put(std::move(done));
  }

  std::vector<Json> open_;
  std::vector<std::string> keys_;  // the key awaiting its value, per open level
  Json root_;
  bool tooDeep_ = false;
  size_t errorOffset_ = 0;
  std::string error_;
};

}  // namespace

Result<Json> parseJson(const std::string& text) {
  TreeBuilder builder;
  bool parsed = nlohmann::json::sax_parse(text, &builder, nlohmann::json::input_format_t::json, true);
  if (builder.tooDeep()) {
    return invalidArgument("offset " + std::to_string(offsetPastDepth(text, kMaxJsonDepth)) + ": nested deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels");
  }
  if (!parsed) return invalidArgument("offset " + std::to_string(builder.errorOffset()) + ": " + builder.error());
  return builder.takeRoot();
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
