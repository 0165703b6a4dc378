// runtime/common/json.h: a strict JSON reader (RFC 8259, parsed by nlohmann/json) into a
// small tree, for the files hvdrun reads: Chrome traces (hvdrun timeline summary), torch's
// error files, and tests that check what hvdrun wrote. Errors name the byte offset where
// the text stops being JSON and what was wrong there.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "runtime/common/status.h"

namespace hvd {

struct Json {
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value;

  bool isObject() const { return std::holds_alternative<Object>(value); }
  bool isArray() const { return std::holds_alternative<Array>(value); }
  const Object& object() const { return std::get<Object>(value); }
  const Array& array() const { return std::get<Array>(value); }
  const std::string& str() const { return std::get<std::string>(value); }
  double number() const { return std::get<double>(value); }
  bool has(const std::string& key) const { return isObject() && object().count(key) > 0; }
  const Json& operator[](const std::string& key) const { return object().at(key); }
};

// Arrays and objects nest at most this deep: the reader recurses, and a file of a million
// '[' would otherwise overflow the stack. Traces nest four levels.
inline constexpr int kMaxJsonDepth = 256;

// The document; kInvalidArgument "offset N: what" when the text is not JSON or nests deeper
// than kMaxJsonDepth.
Result<Json> parseJson(const std::string& text);
// The file's document; kSystem when it cannot be read, kInvalidArgument naming the file
// and the offset when it is not JSON.
Result<Json> readJsonFile(const std::string& path);

}  // namespace hvd
