// runtime/common/cpu_budget.cc: affinity and cgroup CPU quota, read from /proc and /sys.
#include "runtime/common/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hvd {
namespace {

std::optional<std::string> readSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

std::optional<long long> parseInteger(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A path and each of its parents up to `top` (included), innermost first.
void addWithParents(const std::string& top, std::string_view relative, std::vector<std::string>& out) {
  std::string rel(relative);
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  for (;;) {
    out.push_back(top + rel);
    if (rel.empty()) return;
    rel.erase(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/'));
  }
}

// v1: cpu.cfs_quota_us of -1 means no limit.
std::optional<double> v1Quota(const std::string& dir) {
  auto quota = readSmallFile(dir + "/cpu.cfs_quota_us");
  auto period = readSmallFile(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  auto q = parseInteger(*quota), p = parseInteger(*period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return static_cast<double>(*q) / static_cast<double>(*p);
}

}  // namespace

std::optional<double> parseCpuMax(std::string_view text) {
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto quota = parseInteger(text.substr(0, space));  // "max" parses as no number: no limit
  auto period = parseInteger(text.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::vector<std::string> cgroupCpuDirs(std::string_view procSelfCgroup) {
  std::vector<std::string> dirs;
  std::istringstream lines{std::string(procSelfCgroup)};
  for (std::string line; std::getline(lines, line);) {
    // hierarchy-ID:controller-list:path
    size_t first = line.find(':'), second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = std::string_view(line).substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      addWithParents("/sys/fs/cgroup", path, dirs);
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "cpu") continue;
      addWithParents("/sys/fs/cgroup/" + controllers, path, dirs);
      if (controllers != "cpu") addWithParents("/sys/fs/cgroup/cpu", path, dirs);
    }
  }
  return dirs;
}

std::optional<double> cgroupCpuQuota(const std::string& root) {
  auto self = readSmallFile(root + "/proc/self/cgroup");
  if (!self) return std::nullopt;
  std::optional<double> tightest;
  for (const std::string& dir : cgroupCpuDirs(*self)) {
    std::optional<double> quota;
    if (auto max = readSmallFile(root + dir + "/cpu.max")) quota = parseCpuMax(*max);
    else quota = v1Quota(root + dir);
    if (quota && (!tightest || *quota < *tightest)) tightest = quota;
  }
  return tightest;
}

std::optional<int> parseRunnableTasks(std::string_view loadavg) {
  // Three load averages, then running/total.
  for (int field = 0; field < 3; ++field) {
    size_t space = loadavg.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    loadavg.remove_prefix(space + 1);
  }
  size_t slash = loadavg.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto running = parseInteger(loadavg.substr(0, slash));
  if (!running || *running < 0 || *running > INT_MAX) return std::nullopt;
  return static_cast<int>(*running);
}

std::optional<int> runnableTasks() {
  auto text = readSmallFile("/proc/loadavg");
  if (!text) return std::nullopt;
  return parseRunnableTasks(*text);
}

std::vector<int> affinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

int usableCores() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  return usableCores(cores, cgroupQuotaCores());
}

int usableCores(size_t affinityCount, std::optional<int> quotaCores) {
  int cores = static_cast<int>(std::min<size_t>(affinityCount, INT_MAX));
  if (cores <= 0) cores = static_cast<int>(std::clamp<long>(::sysconf(_SC_NPROCESSORS_ONLN), 1, INT_MAX));
  if (quotaCores) cores = std::min(cores, *quotaCores);
  return std::max(cores, 1);
}

std::optional<int> cgroupQuotaCores() {
  auto quota = cgroupCpuQuota();
  if (!quota || *quota <= 0) return std::nullopt;
  return static_cast<int>(std::clamp(std::ceil(*quota - 1e-9), 1.0, static_cast<double>(INT_MAX)));
}

}  // namespace hvd
