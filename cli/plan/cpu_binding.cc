// cli/plan/cpu_binding.cc: --bind-to's CPU lists.
#include "cli/plan/cpu_binding.h"

#include <algorithm>
#include <map>
#include <utility>

namespace hvd::cli {

Result<BindTo> parseBindTo(std::string_view text) {
  if (text == "none") return BindTo::kNone;
  if (text == "core") return BindTo::kCore;
  if (text == "core:overload-allowed") return BindTo::kCoreOverloadAllowed;
  if (text == "socket") return BindTo::kSocket;
  return Status(Errc::kInvalidArgument, "--bind-to: '" + std::string(text) + "' is not one of none, core, core:overload-allowed, socket")
      .withHint("core gives each rank on a host its own cores (core:overload-allowed lets ranks outnumber them); socket "
                "spreads ranks over sockets");
}

std::string_view bindToName(BindTo bind) {
  switch (bind) {
    case BindTo::kCore: return "core";
    case BindTo::kCoreOverloadAllowed: return "core:overload-allowed";
    case BindTo::kSocket: return "socket";
    case BindTo::kNone: break;
  }
  return "none";
}

std::string cpuListText(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Result<std::vector<std::vector<int>>> cpuBindings(BindTo bind, int localRanks, const std::vector<UsableCpu>& usable) {
  std::vector<std::vector<int>> out(static_cast<size_t>(std::max(localRanks, 0)));
  if (bind == BindTo::kNone || localRanks <= 0) return out;
  // Groups in the order of their first CPU: cores (socket, core id) or sockets.
  std::vector<std::vector<int>> groups;
  std::map<std::pair<int, int>, size_t> index;
  for (const UsableCpu& c : usable) {
    auto key = bind != BindTo::kSocket ? std::make_pair(c.socket, c.core) : std::make_pair(c.socket, 0);
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(c.cpu);
  }
  if (groups.empty()) return Status(Errc::kInvalidUsage, "--bind-to: this process may use no CPU");
  if (bind == BindTo::kSocket) {
    for (int r = 0; r < localRanks; ++r) out[static_cast<size_t>(r)] = groups[static_cast<size_t>(r) % groups.size()];
    return out;
  }
  const size_t cores = groups.size();
  if (bind == BindTo::kCoreOverloadAllowed && static_cast<size_t>(localRanks) > cores) {
    for (size_t r = 0; r < static_cast<size_t>(localRanks); ++r) {
      out[r] = groups[r % cores];
      std::sort(out[r].begin(), out[r].end());
    }
    return out;
  }
  if (static_cast<size_t>(localRanks) > cores) {
    std::vector<int> all;
    for (const UsableCpu& c : usable) all.push_back(c.cpu);
    return Status(Errc::kInvalidUsage, "--bind-to core: " + std::to_string(localRanks) + " ranks on this host, but hvdrun may use only " +
                                           std::to_string(cores) + " core(s) here (CPUs " + cpuListText(all) + ")")
        .withHint("give at most " + std::to_string(cores) + " rank(s) per host, --bind-to core:overload-allowed to pin them " +
                  "round robin, or --bind-to none to let the scheduler place them");
  }
  const size_t each = cores / static_cast<size_t>(localRanks);
  for (size_t r = 0; r < static_cast<size_t>(localRanks); ++r) {
    for (size_t k = r * each; k < (r + 1) * each; ++k) out[r].insert(out[r].end(), groups[k].begin(), groups[k].end());
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

}  // namespace hvd::cli
