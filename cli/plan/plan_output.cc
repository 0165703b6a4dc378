// cli/plan/plan_output.cc: renderings of a Plan.
#include "cli/plan/plan_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/plan/json_writer.h"
#include "cli/plan/shell_quote.h"
#include "slurm/hostlist.h"

namespace hvd::cli {
namespace {

std::string joined(const std::vector<std::string>& items, const char* separator = ",") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

std::string gpuCell(const RankPlan& r) {
  if (!r.gpus.empty()) return joined(r.gpus);
  return r.hideGpus ? "none" : "-";
}

std::string table(const Plan& plan) {
  size_t hostWidth = 4;
  for (const HostPlan& h : plan.hosts) hostWidth = std::max(hostWidth, h.host.size());
  std::string out = fmt::format("# {} rank(s) on {} host(s) from {}; MASTER_ADDR={} MASTER_PORT={}\n",
                                plan.ranks.size(), std::count_if(plan.hosts.begin(), plan.hosts.end(),
                                                                 [](const HostPlan& h) { return h.ranks > 0; }),
                                plan.sourceDetail, plan.masterAddr, plan.masterPort);
  out += fmt::format("{:>5}  {:<{}}  {:>5}  {:>5}  {:<9}  {}\n", "rank", "host", hostWidth, "local", "cross", "gpu",
                     "role");
  for (const RankPlan& r : plan.ranks) {
    out += fmt::format("{:>5}  {:<{}}  {:>5}  {:>5}  {:<9}  {}\n", r.where.rank, r.where.host, hostWidth,
                       r.where.localRank, r.where.crossRank, gpuCell(r), roleName(r.role));
  }
  for (const HostPlan& h : plan.hosts) {
    if (h.ranks > 0 && !h.devices.empty() && !h.devicesKnown) {
      out += fmt::format("# {}: GPU devices not visible from here; local rank r gets device r\n", h.host);
    }
  }
  return out;
}

std::string json(const Plan& plan) {
  JsonWriter w;
  w.beginObject();
  w.key("source").value(plan.sourceDetail);
  w.key("size").value(static_cast<int>(plan.ranks.size()));
  w.key("master_addr").value(plan.masterAddr);
  w.key("master_port").value(plan.masterPort);
  w.key("hosts").beginArray();
  for (const HostPlan& h : plan.hosts) {
    w.beginObject().key("host").value(h.host).key("slots").value(h.slots).key("ranks").value(h.ranks);
    w.key("gpus").beginArray();
    for (const auto& d : h.devices) w.value(d);
    w.endArray().key("gpus_known").value(h.devicesKnown).endObject();
  }
  w.endArray();
  w.key("ranks").beginArray();
  for (const RankPlan& r : plan.ranks) {
    w.beginObject();
    w.key("rank").value(r.where.rank).key("host").value(r.where.host);
    w.key("local_rank").value(r.where.localRank).key("local_size").value(r.where.localSize);
    w.key("cross_rank").value(r.where.crossRank).key("cross_size").value(r.where.crossSize);
    w.key("gpus").beginArray();
    for (const auto& g : r.gpus) w.value(g);
    w.endArray();
    w.key("gpu_slots").beginArray();
    for (int slot : r.gpuSlots) w.value(slot);
    w.endArray();
    w.key("role").value(roleName(r.role));
    w.key("env").beginObject();
    for (const std::string& kv : planEnvironment(plan, r)) {
      size_t eq = kv.find('=');
      w.key(kv.substr(0, eq)).value(kv.substr(eq + 1));
    }
    w.endObject().endObject();
  }
  w.endArray().endObject();
  return w.str() + "\n";
}

}  // namespace

std::string planHostsSpec(const Plan& plan) {
  std::string spec;
  size_t i = 0;
  while (i < plan.hosts.size()) {
    if (plan.hosts[i].ranks == 0) {
      ++i;
      continue;
    }
    // A run of hosts with the same number of ranks becomes one hostlist.
    std::vector<std::string> names;
    int ranks = plan.hosts[i].ranks;
    while (i < plan.hosts.size() && (plan.hosts[i].ranks == ranks || plan.hosts[i].ranks == 0)) {
      if (plan.hosts[i].ranks == ranks) names.push_back(plan.hosts[i].host);
      ++i;
    }
    auto compressed = slurm::compressHostlist(names);
    std::string text;
    if (compressed) {
      text = *compressed;
    } else {
      for (const auto& n : names) text += (text.empty() ? "" : ",") + n;
    }
    // Every top-level comma starts another item, which needs its own ":ranks".
    int depth = 0;
    std::string item;
    for (size_t k = 0; k <= text.size(); ++k) {
      if (k == text.size() || (text[k] == ',' && depth == 0)) {
        spec += (spec.empty() ? "" : ",") + item + ":" + std::to_string(ranks);
        item.clear();
        continue;
      }
      if (text[k] == '[') ++depth;
      if (text[k] == ']') --depth;
      item += text[k];
    }
  }
  return spec;
}

std::string planGpusSpec(const Plan& plan) {
  std::map<std::string, int> popularity;
  for (const HostPlan& h : plan.hosts) {
    if (h.ranks > 0 && h.devicesKnown) ++popularity[joined(h.devices)];
  }
  if (popularity.empty()) return "";
  std::string common = std::max_element(popularity.begin(), popularity.end(), [](const auto& a, const auto& b) {
                         return a.second < b.second;
                       })->first;
  std::string spec = "*=" + common;
  for (const HostPlan& h : plan.hosts) {
    if (h.ranks > 0 && h.devicesKnown && joined(h.devices) != common) spec += ";" + h.host + "=" + joined(h.devices);
  }
  return spec;
}

std::optional<std::vector<std::string>> devicesFromGpusSpec(std::string_view spec, std::string_view host) {
  std::optional<std::string_view> found, fallback;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(';', start);
    std::string_view entry = spec.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t eq = entry.find('=');
    if (eq != std::string_view::npos) {
      if (entry.substr(0, eq) == host) found = entry.substr(eq + 1);
      if (entry.substr(0, eq) == "*") fallback = entry.substr(eq + 1);
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::optional<std::string_view> list = found ? found : fallback;
  if (!list) return std::nullopt;
  std::vector<std::string> devices;
  size_t s = 0;
  while (s < list->size()) {
    size_t comma = list->find(',', s);
    devices.emplace_back(list->substr(s, comma == std::string_view::npos ? std::string_view::npos : comma - s));
    if (comma == std::string_view::npos) break;
    s = comma + 1;
  }
  return devices;
}

Result<PlanFormat> parsePlanFormat(std::string_view name) {
  static const std::map<std::string_view, PlanFormat> kFormats = {
      {"table", PlanFormat::kTable}, {"json", PlanFormat::kJson},          {"sh", PlanFormat::kSh},
      {"hostfile", PlanFormat::kHostfile}, {"tf_config", PlanFormat::kTfConfig}, {"mpi", PlanFormat::kMpi}};
  if (auto it = kFormats.find(name); it != kFormats.end()) return it->second;
  return invalidArgument("--format '" + std::string(name) + "' is not one of table, json, sh, hostfile, tf_config, mpi");
}

std::vector<std::string> mpirunCommand(const Plan& plan, const std::vector<std::string>& program, bool standalone) {
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(plan.ranks.size())};
  std::string hosts;
  for (const HostPlan& h : plan.hosts) {
    if (h.ranks > 0) hosts += (hosts.empty() ? "" : ",") + h.host + ":" + std::to_string(h.ranks);
  }
  argv.insert(argv.end(), {"-H", hosts, "-bind-to", std::string(bindToName(plan.bindTo)), "-map-by", "slot"});
  if (!plan.networkInterface.empty()) {
    argv.insert(argv.end(), {"-mca", "btl_tcp_if_include", plan.networkInterface, "-mca", "oob_tcp_if_include",
                             plan.networkInterface});
  }
  // Variables that differ per rank come from Open MPI's own (OMPI_COMM_WORLD_*) in the rank.
  std::map<std::string, std::string> common;
  bool first = true;
  for (const RankPlan& r : plan.ranks) {
    std::map<std::string, std::string> mine;
    for (const std::string& kv : planEnvironment(plan, r)) mine[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    if (first) {
      common = std::move(mine);
      first = false;
      continue;
    }
    for (auto it = common.begin(); it != common.end();) {
      auto m = mine.find(it->first);
      it = m == mine.end() || m->second != it->second ? common.erase(it) : std::next(it);
    }
  }
  if (!plan.ranks.empty()) {
    for (const std::string& kv : planEnvironment(plan, plan.ranks.front())) {  // the contract's order
      const std::string name = kv.substr(0, kv.find('='));
      if (standalone && name.rfind("HVD_RENDEZVOUS_", 0) == 0) continue;
      if (common.count(name)) argv.insert(argv.end(), {"-x", kv});
    }
  }
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

Result<std::string> renderPlan(const Plan& plan, PlanFormat format, std::optional<int> rank,
                               const std::vector<std::string>& program) {
  if (rank && (*rank < 0 || *rank >= static_cast<int>(plan.ranks.size()))) {
    return invalidUsage("--rank " + std::to_string(*rank) + " is not a rank of this plan (0 to " +
                        std::to_string(plan.ranks.size() - 1) + ")");
  }
  switch (format) {
    case PlanFormat::kTable: return table(plan);
    case PlanFormat::kJson: return json(plan);
    case PlanFormat::kSh: {
      if (!rank) return invalidUsage("--format sh prints one rank's exports: add --rank R");
      std::string out;
      for (const std::string& kv : planEnvironment(plan, plan.ranks[static_cast<size_t>(*rank)])) {
        size_t eq = kv.find('=');
        out += "export " + kv.substr(0, eq) + "=" + shellQuote(kv.substr(eq + 1)) + "\n";
      }
      return out;
    }
    case PlanFormat::kHostfile: {
      std::string out;
      for (const HostPlan& h : plan.hosts) {
        if (h.ranks > 0) out += h.host + " slots=" + std::to_string(h.ranks) + "\n";
      }
      return out;
    }
    case PlanFormat::kTfConfig: {
      if (!plan.tfConfig) return invalidUsage("--format tf_config needs --tf-config");
      if (rank) return tfConfigJson(plan, plan.ranks[static_cast<size_t>(*rank)]) + "\n";
      std::string out;
      for (const RankPlan& r : plan.ranks) out += tfConfigJson(plan, r) + "\n";
      return out;
    }
    case PlanFormat::kMpi: {
      if (program.empty()) return invalidUsage("--format mpi prints the mpirun command: give the program to run");
      return shellJoin(mpirunCommand(plan, program, /*standalone=*/true)) + "\n";
    }
  }
  return internalError("unknown plan format");
}

}  // namespace hvd::cli
