// tests/support/cpu_list.h: the kernel's CPU list notation, as /proc/<pid>/status's
// Cpus_allowed_list writes it, for tests that check where ranks were pinned.
#pragma once

#include <map>
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

// Each rank's CPUs from hvdrun's output of `grep Cpus_allowed_list /proc/self/status`, one
// "[rank]<stdout>:Cpus_allowed_list:\t0-3" line a rank.
inline std::map<int, std::set<int>> cpusByRank(const std::string& out) {
  std::map<int, std::set<int>> cpus;
  std::stringstream lines(out);
  const std::string tag = "]<stdout>:Cpus_allowed_list:";
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(tag);
    if (line.rfind('[', 0) != 0 || at == std::string::npos) continue;
    size_t list = line.find_first_not_of(" \t", at + tag.size());
    if (list == std::string::npos) continue;
    cpus[std::stoi(line.substr(1, at - 1))] = cpusOfList(line.substr(list));
  }
  return cpus;
}

}  // namespace hvd::test
