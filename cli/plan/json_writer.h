// cli/plan/json_writer.h: a minimal JSON writer for hvdrun's outputs (plans, TF_CONFIG).
// Keys keep the order they are written in; strings are escaped per RFC 8259.
#pragma once

#include <string>
#include <string_view>

namespace hvd::cli {

class JsonWriter {
 public:
  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(long long number);
  JsonWriter& value(int number) { return value(static_cast<long long>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& null();

  const std::string& str() const { return out_; }

  static std::string quoted(std::string_view text);

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void separate();

  std::string out_;
  bool needComma_ = false;
  bool afterKey_ = false;
};

}  // namespace hvd::cli
