// tests/support/cpu_list.h: the kernel's CPU list notation, as /proc/<pid>/status's
// Cpus_allowed_list writes it, for tests that check where ranks were pinned.
#pragma once

#include <set>
#include <sstream>
#include <string>

namespace hvd::test {

// "0-2,5" -> {0, 1, 2, 5}.
inline std::set<int> cpusOfList(const std::string& text) {
  std::set<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t dash = part.find('-');
    int from = std::stoi(part.substr(0, dash)), to = dash == std::string::npos ? from : std::stoi(part.substr(dash + 1));
    for (int c = from; c <= to; ++c) out.insert(c);
  }
  return out;
}

}  // namespace hvd::test
