// runtime/common/ascii_case.cc: see ascii_case.h.
#include "runtime/common/ascii_case.h"

namespace hvd {

std::string asciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

}  // namespace hvd
