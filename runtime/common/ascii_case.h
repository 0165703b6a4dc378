// runtime/common/ascii_case.h: ASCII lower case for words users may type in any case
// (log levels, backend names, switches). Not locale-aware on purpose: a Turkish locale's
// tolower would turn "INFO" into "ınfo" and refuse it.
#pragma once

#include <string>
#include <string_view>

namespace hvd {

// `text` with A-Z turned to a-z; every other byte, UTF-8 included, kept as it is.
std::string asciiLower(std::string_view text);

}  // namespace hvd
