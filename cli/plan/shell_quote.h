// cli/plan/shell_quote.h: POSIX sh quoting for the command lines and `export` lines
// hvdrun prints: any string, newlines and quotes included, reads back as itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hvd::cli {

// Unchanged when only safe characters ([A-Za-z0-9_@%+:,./-]; no "=": "A=1" as a first word
// would be an assignment); otherwise single-quoted
// with each ' written as '\''. The empty string becomes ''.
// afterFirstWord: '=' is then safe too (only a command's first word can be an assignment).
std::string shellQuote(std::string_view word, bool afterFirstWord = false);

// Words joined by spaces, each quoted as needed for its position.
std::string shellJoin(const std::vector<std::string>& words);

}  // namespace hvd::cli
