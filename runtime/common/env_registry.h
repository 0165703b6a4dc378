// runtime/common/env_registry.h: every environment variable the runtime library reads,
// declared once with its default and one line of doc, and read once (at init) into a
// validated snapshot. docs/environment.md's runtime table is checked against the list by
// a test, and another test fails if runtime code reads an HVD_ variable on its own.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "runtime/common/status.h"

namespace hvd {

enum class EnvKind { kInteger, kText };

struct EnvVar {
  std::string_view name;
  std::string_view fallback;  // used when unset; "" for none
  std::string_view doc;
  EnvKind kind = EnvKind::kText;
  long long minimum = 0, maximum = 0;  // kInteger only, inclusive
};

// The declarations, in the order the manual lists them.
std::span<const EnvVar> runtimeVariables();

// The declared variables' values at one moment. Reading never fails halfway: read()
// returns kInvalidArgument naming the first malformed value ("HVD_RANK='3x': expected a
// whole number from 0 to ...") and the snapshot is only made when all are well-formed.
class EnvSnapshot {
 public:
  using Lookup = std::function<const char*(const char*)>;
  static Result<EnvSnapshot> read(const Lookup& lookup);
  static Result<EnvSnapshot> fromProcess();  // std::getenv

  bool isSet(std::string_view name) const;            // set, even to ""
  long long integer(std::string_view name) const;     // the value or its default
  const std::string& text(std::string_view name) const;  // the value or its default

 private:
  const EnvVar& declared(std::string_view name) const;  // aborts on an undeclared name: a bug
  std::map<std::string, std::string, std::less<>> values_;  // only the ones set
  std::map<std::string, std::string, std::less<>> fallbacks_;
};

}  // namespace hvd
