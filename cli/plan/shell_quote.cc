// cli/plan/shell_quote.cc: single quotes are the one quoting in which nothing expands.
#include "cli/plan/shell_quote.h"

namespace hvd::cli {

std::string shellQuote(std::string_view word, bool afterFirstWord) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("_@%+:,./-").find(c) != std::string_view::npos || (afterFirstWord && c == '=');
    safe = safe && ok;
  }
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string shellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    bool first = out.empty();
    if (!first) out += ' ';
    out += shellQuote(w, !first);
  }
  return out;
}

}  // namespace hvd::cli
