// slurm/sbatch_directives.cc: SbatchRequest -> sorted "#SBATCH --name=value" lines.
#include "slurm/sbatch_directives.h"

#include <algorithm>
#include <regex>

namespace hvd::slurm {
namespace {

Status badValue(const std::string& option, const std::string& value, const std::string& why) {
  std::string shown = value;
  std::replace(shown.begin(), shown.end(), '\n', ' ');
  return Status(Errc::kInvalidArgument, "--" + option + " '" + shown + "': " + why);
}

// sbatch reads an #SBATCH line up to its end and strips double quotes; a value with a
// newline would end the line early and one with a quote would be read differently.
Result<std::string> directive(const std::string& option, const std::string& value) {
  if (value.find('\n') != std::string::npos || value.find('\r') != std::string::npos) {
    return badValue(option, value, "a job script's #SBATCH line cannot hold a line break");
  }
  if (value.find('"') != std::string::npos) {
    return badValue(option, value, "a double quote cannot be passed through an #SBATCH line");
  }
  if (value.empty()) return badValue(option, value, "the value is empty");
  bool needsQuotes = value.find_first_of(" \t") != std::string::npos;
  return "#SBATCH --" + option + "=" + (needsQuotes ? "\"" + value + "\"" : value);
}

}  // namespace

bool isSlurmTime(const std::string& text) {
  static const std::regex kTime(R"(\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2})");
  return text == "UNLIMITED" || text == "INFINITE" || text == "unlimited" || text == "infinite" ||
         std::regex_match(text, kTime);
}

Result<SbatchGeometry> sbatchGeometry(const SbatchRequest& r) {
  SbatchGeometry g;
  if (r.ntasksPerNode > 0) {
    g.ntasksPerNode = r.ntasksPerNode;
  } else if (r.gpusPerNode > 0) {
    g.ntasksPerNode = r.gpusPerNode;  // one rank per GPU
  } else if (r.ranks > 0) {
    int nodes = std::max(r.nodes, 1);
    g.ntasksPerNode = (r.ranks + nodes - 1) / nodes;
  }
  g.nodes = r.nodes > 0 ? r.nodes : r.ranks > 0 ? (r.ranks + g.ntasksPerNode - 1) / g.ntasksPerNode : 1;
  if (r.ranks > 0 && static_cast<long long>(g.nodes) * g.ntasksPerNode < r.ranks) {
    return Status(Errc::kInvalidUsage, "-np " + std::to_string(r.ranks) + " does not fit " + std::to_string(g.nodes) +
                                           " node(s) x " + std::to_string(g.ntasksPerNode) + " rank(s) per node")
        .withHint("raise --nodes or --ntasks-per-node, or leave one out and hvdrun computes it");
  }
  return g;
}

Result<std::vector<std::string>> sbatchDirectives(const SbatchRequest& r) {
  auto geometry = sbatchGeometry(r);
  if (!geometry.isOk()) return geometry.status();
  std::vector<std::pair<std::string, std::string>> options = {
      {"job-name", r.jobName},
      {"nodes", std::to_string(geometry->nodes)},
      {"ntasks-per-node", std::to_string(geometry->ntasksPerNode)},
      {"output", r.output},
      {"error", r.error},
      {"signal", "B:" + r.signal + "@" + std::to_string(r.signalSeconds)},
  };
  if (r.ranks > 0 && r.ranks != geometry->nodes * geometry->ntasksPerNode) {
    options.emplace_back("ntasks", std::to_string(r.ranks));
  }
  if (r.gpusPerNode > 0) options.emplace_back("gpus-per-node", std::to_string(r.gpusPerNode));
  if (r.cpusPerTask > 0) options.emplace_back("cpus-per-task", std::to_string(r.cpusPerTask));
  if (!r.time.empty()) {
    if (!isSlurmTime(r.time)) {
      return badValue("time", r.time, "not a time sbatch takes (minutes, H:M:S, D-H, D-H:M:S or UNLIMITED)");
    }
    options.emplace_back("time", r.time);
  }
  static const std::regex kMemory(R"(\d+[KMGTkmgt]?)");
  if (!r.mem.empty() && !std::regex_match(r.mem, kMemory)) {
    return badValue("mem", r.mem, "expected a size like 64G, 512M or 4000 (megabytes)");
  }
  for (const auto& [name, value] : {std::pair<const char*, const std::string&>{"partition", r.partition},
                                    {"account", r.account}, {"qos", r.qos}, {"constraint", r.constraint},
                                    {"mem", r.mem}}) {
    if (!value.empty()) options.emplace_back(name, value);
  }
  std::vector<std::string> lines;
  for (const auto& [name, value] : options) {
    auto line = directive(name, value);
    if (!line.isOk()) return line.status();
    lines.push_back(std::move(*line));
  }
  // A preempted job is started again: its output files must keep the first run's lines.
  if (r.requeue) lines.insert(lines.end(), {"#SBATCH --open-mode=append", "#SBATCH --requeue"});
  for (const std::string& extra : r.extraArgs) {
    if (extra.size() < 2 || extra[0] != '-') {
      return badValue("sbatch-arg", extra, "not an sbatch option (it must start with '-', e.g. --exclusive)");
    }
    if (extra.find_first_of("\n\r") != std::string::npos) {
      return badValue("sbatch-arg", extra, "a job script's #SBATCH line cannot hold a line break");
    }
    std::string name = extra.substr(0, extra.find_first_of("= "));
    for (const auto& [ours, value] : options) {
      if (name == "--" + ours) {
        return badValue("sbatch-arg", extra, "hvdrun writes " + name + " itself")
            .withHint("use hvdrun's own --" + ours + " option (or its config key) instead");
      }
    }
    lines.push_back("#SBATCH " + extra);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace hvd::slurm
