// cli/plan/scheduler_hosts.cc: PBS node files and LSF host lists.
#include "cli/plan/scheduler_hosts.h"

#include <map>

#include "cli/plan/host_name.h"
#include "cli/plan/host_spec.h"
#include "cli/plan/whole_number.h"

namespace hvd::cli {
namespace {

std::string variable(const slurm::Environment& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// "hostA 4 hostB 2": names and slot counts in pairs, separated by spaces.
Result<std::vector<HostSlots>> lsfHosts(std::string_view text) {
  std::vector<std::string_view> tokens;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  if (tokens.empty()) return invalidArgument("LSB_MCPU_HOSTS is empty");
  if (tokens.size() % 2 != 0) {
    return invalidArgument("LSB_MCPU_HOSTS='" + std::string(text) + "': host '" + std::string(tokens.back()) +
                           "' has no slot count (LSF writes 'hostA 4 hostB 2')");
  }
  std::vector<HostSlots> hosts;
  std::map<std::string, size_t, std::less<>> entry;
  for (size_t i = 0; i < tokens.size(); i += 2) {
    std::string_view host = tokens[i], count = tokens[i + 1];
    auto slots = wholeNumber(count);
    if (!slots || *slots < 1) {
      return invalidArgument("LSB_MCPU_HOSTS: host '" + std::string(host) + "' has slot count '" + std::string(count) +
                             "', which is not a whole number of at least 1");
    }
    if (Status s = checkHostName(host); !s.isOk()) return invalidArgument("LSB_MCPU_HOSTS: " + s.message());
    if (auto it = entry.find(host); it != entry.end()) {
      hosts[it->second].slots += *slots;
      continue;
    }
    entry.emplace(std::string(host), hosts.size());
    hosts.push_back({std::string(host), *slots, true});
  }
  return hosts;
}

}  // namespace

Result<std::optional<SchedulerHosts>> schedulerHosts(const slurm::Environment& env, std::string_view pbsNodefileText) {
  if (std::string path = variable(env, "PBS_NODEFILE"); !path.empty()) {
    auto hosts = parseHostfile(pbsNodefileText, path);
    if (!hosts) return hosts.status().withContext("PBS_NODEFILE");
    std::string job = variable(env, "PBS_JOBID");
    return std::optional<SchedulerHosts>(SchedulerHosts{
        HostSource::kPbs, "PBS job " + (job.empty() ? std::string("?") : job) + " (PBS_NODEFILE " + path + ")",
        std::move(*hosts)});
  }
  if (std::string list = variable(env, "LSB_MCPU_HOSTS"); !list.empty()) {
    auto hosts = lsfHosts(list);
    if (!hosts) return hosts.status();
    std::string job = variable(env, "LSB_JOBID");
    return std::optional<SchedulerHosts>(SchedulerHosts{
        HostSource::kLsf, "LSF job " + (job.empty() ? std::string("?") : job) + " (LSB_MCPU_HOSTS)", std::move(*hosts)});
  }
  return std::optional<SchedulerHosts>();
}

}  // namespace hvd::cli
