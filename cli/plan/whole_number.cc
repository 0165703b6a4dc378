// cli/plan/whole_number.cc: from_chars, with out of range made its nearest end.
#include "cli/plan/whole_number.h"

#include <charconv>
#include <climits>

namespace hvd::cli {

std::optional<int> wholeNumber(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return text.front() == '-' ? INT_MIN : INT_MAX;
  if (ec != std::errc()) return std::nullopt;
  return value;
}

}  // namespace hvd::cli
