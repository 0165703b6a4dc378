// tests/support/json_lite.h: a small strict JSON parser for tests that must check files the
// project writes (Chrome traces): objects, arrays, strings with escapes, numbers, true,
// false, null. Parse errors come back as a message with the byte offset.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hvd::test {

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

// The document, or an error ("offset N: what") in `error`.
Json parseJson(const std::string& text, std::string& error);
// The file's document; error also for an unreadable file.
Json parseJsonFile(const std::string& path, std::string& error);

}  // namespace hvd::test
