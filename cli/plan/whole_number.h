// cli/plan/whole_number.h: a count as a user types it (-np, a host's slots): a whole number,
// one past int's range read as that range's nearest end, so that the caller's own bound names
// it ("more ranks than hvdrun starts") instead of "not a whole number".
#pragma once

#include <optional>
#include <string_view>

namespace hvd::cli {

// nullopt when `text` is not a whole number (empty, a sign alone, other characters).
std::optional<int> wholeNumber(std::string_view text);

}  // namespace hvd::cli
