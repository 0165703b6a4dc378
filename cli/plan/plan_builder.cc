// cli/plan/plan_builder.cc: sources of hosts, placement, GPUs, TF roles, MASTER_*.
#include <algorithm>
#include <charconv>
#include <numeric>

#include "cli/plan/host_gpus.h"
#include "cli/plan/host_spec.h"
#include "cli/plan/scheduler_hosts.h"
#include "cli/plan/plan.h"
#include "slurm/allocation.h"
#include "slurm/gpu_binding.h"

namespace hvd::cli {
namespace {

bool isThisMachine(const std::string& host, const MachineFacts& facts) {
  return host == facts.hostname || host == "localhost" || host == "127.0.0.1" || host == "::1";
}

std::vector<std::string> indices(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(std::to_string(i));
  return out;
}

// The GPUs this machine offers: an inherited CUDA_VISIBLE_DEVICES wins over the driver's count.
Result<std::vector<std::string>> localDevices(const slurm::Environment& env, const MachineFacts& facts) {
  if (auto v = slurm::lookup(env, "CUDA_VISIBLE_DEVICES")) return slurm::parseDeviceList(*v, "CUDA_VISIBLE_DEVICES");
  return indices(facts.localGpuCount);
}

std::string describeHosts(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < 4; ++i) out += (i ? "," : "") + hosts[i].host + ":" + std::to_string(hosts[i].slots);
  if (hosts.size() > 4) out += ",... (" + std::to_string(hosts.size()) + " hosts)";
  return out;
}

Status hostsFromSlurm(const slurm::Allocation& a, const MachineFacts& facts, Plan& plan) {
  plan.source = HostSource::kSlurm;
  plan.slurmJobId = a.jobId;
  plan.sourceDetail = "Slurm job " + a.jobId;
  // GPUs per node: Slurm says how many when uniform; the node we run on also shows its list.
  bool jobHasGpus = a.gpus.binding != slurm::GpuBinding::kNone;
  for (const slurm::NodeSlots& node : a.nodes) {
    HostPlan h;
    h.host = node.name;
    h.slots = node.tasks > 0 ? node.tasks : 1;
    h.local = node.name == facts.hostname;
    h.cpus = node.cpus;
    if (h.local && a.gpus.visibleSet) {
      h.devices = a.gpus.visible;
      h.devicesKnown = true;
    } else if (auto it = facts.slurmNodeGpus.find(node.name); it != facts.slurmNodeGpus.end()) {
      h.devices = it->second;
      h.devicesKnown = true;
    } else if (node.gpus >= 0) {
      h.devices = indices(node.gpus);
      h.devicesKnown = true;
    } else if (jobHasGpus && a.gpus.visibleSet) {
      h.devices = indices(static_cast<int>(a.gpus.visible.size()));  // assume nodes alike
    }
    plan.hosts.push_back(std::move(h));
  }
  return Status::ok();
}

// `source` names the list in messages ("-H", "the hostfile").
Status hostsFromList(const std::vector<HostSlots>& list, const std::vector<std::string>& local, Plan& plan,
                     const MachineFacts& facts, const std::string& source) {
  const HostSlots* here = nullptr;  // the entry that named this machine first
  for (const HostSlots& hs : list) {
    HostPlan h;
    h.host = hs.host;
    h.slots = hs.slots;
    h.slotsGiven = hs.slotsGiven;
    h.local = isThisMachine(hs.host, facts);
    // Two names of this machine (localhost, 127.0.0.1, its host name) were two hosts: each
    // numbered its local ranks from 0, so two ranks took each GPU, and neither half shared
    // memory with the other.
    if (h.local && here != nullptr) {
      return invalidUsage(source + " names this machine twice: '" + here->host + "' and '" + hs.host +
                          "' (its ranks would be numbered as two hosts' and share its GPUs twice over)")
          .withHint("give this machine once, with all its slots: " + here->host + ":" +
                    std::to_string(here->slots + hs.slots));
    }
    if (h.local) here = &hs;
    if (h.local) {
      h.devices = local;
      h.devicesKnown = true;
    }
    plan.hosts.push_back(std::move(h));
  }
  return Status::ok();
}

Status assignRoles(const PlanRequest& r, Plan& plan) {
  const int n = static_cast<int>(plan.ranks.size());
  if (!r.tfConfig) {
    if (r.tfPs > 0 || r.tfChief || r.tfEvaluator) {
      return invalidUsage("--tf-ps, --tf-chief and --tf-evaluator describe TF_CONFIG roles: add --tf-config");
    }
    return Status::ok();
  }
  if (r.tfPs < 0) return invalidArgument("--tf-ps must be 0 or more, got " + std::to_string(r.tfPs));
  int chief = r.tfChief ? 1 : 0, evaluator = r.tfEvaluator ? 1 : 0;
  int workers = n - chief - r.tfPs - evaluator;
  if (workers < 1) {
    return invalidUsage("TF roles do not add up: " + std::to_string(n) + " rank(s) cannot hold " +
                        (chief ? "a chief, " : "") + std::to_string(r.tfPs) + " parameter server(s)" +
                        (evaluator ? ", an evaluator" : "") + " and at least one worker")
        .withHint("raise -np or lower --tf-ps");
  }
  // Rank order: chief, workers, parameter servers, evaluator; so GPUs go to the first ranks.
  int index = 0;
  auto give = [&](Role role, int count) {
    for (int i = 0; i < count; ++i, ++index) {
      plan.ranks[static_cast<size_t>(index)].role = role;
      plan.ranks[static_cast<size_t>(index)].roleIndex = i;
    }
  };
  give(Role::kChief, chief);
  give(Role::kWorker, workers);
  give(Role::kPs, r.tfPs);
  give(Role::kEvaluator, evaluator);
  if (r.tfPortBase <= 0) return internalError("TF_CONFIG's port base was not chosen before planning");
  for (RankPlan& rank : plan.ranks) {
    int port = r.tfPortBase + rank.where.localRank;
    if (port > 65535) return invalidArgument("--tf-port-base " + std::to_string(r.tfPortBase) + " + local rank exceeds 65535");
    rank.tfPort = port;
  }
  return Status::ok();
}

// ranksByHost[h]: the ranks placed on plan.hosts[h], in rank order (they are contiguous).
Status assignGpus(const PlanRequest& r, Plan& plan, const std::vector<std::vector<RankPlan*>>& ranksByHost) {
  if (r.noGpu) return Status::ok();
  if (r.gpusPerRank < 1) return invalidArgument("--gpus-per-rank must be at least 1, got " + std::to_string(r.gpusPerRank));
  const GpuRule rule{r.gpusPerRank, r.oversubscribeGpus, r.tfConfig};
  for (size_t h = 0; h < plan.hosts.size(); ++h) {
    if (plan.hosts[h].ranks == 0) continue;
    HVD_RETURN_IF_ERROR(assignHostGpus(rule, plan.hosts[h], ranksByHost[h]));
  }
  return Status::ok();
}

// torchrun's --nproc-per-node gpu, cpu or auto on host `h`: its GPUs (GPUs per rank at a time)
// where hvdrun knows them (this machine's, Slurm's nodes', what an -H host counted), or its
// CPUs (the job's on a Slurm node, this machine's, an -H host's).
Result<int> ranksForWord(const PlanRequest& r, const MachineFacts& facts, const HostPlan& h) {
  const std::string& word = r.ranksPerHostWord;
  auto counted = h.local ? facts.sshHostCounts.end() : facts.sshHostCounts.find(h.host);
  const bool wasCounted = counted != facts.sshHostCounts.end();
  const bool gpusKnown = h.local || h.devicesKnown || wasCounted;
  const int devices = wasCounted ? counted->second.gpus : static_cast<int>(h.devices.size());
  const int gpus = gpusKnown ? devices / std::max(r.gpusPerRank, 1) : 0;
  if (word == "gpu" || (word == "auto" && gpus > 0)) {
    if (!gpusKnown) {
      // A Slurm node whose GPUs Slurm did not say (-H hosts count their own: hostsToCount).
      return invalidUsage("--nproc-per-node " + word + ": hvdrun has no count of the GPUs of host " + h.host)
          .withHint("give the number of ranks (--nproc-per-node N)");
    }
    if (gpus == 0) {
      return invalidUsage("--nproc-per-node " + word + ", but host " + h.host +
                          (devices == 0 ? " shows no GPU" : " shows fewer GPUs than --gpus-per-rank"))
          .withHint("check CUDA_VISIBLE_DEVICES and the driver (hvdrun --check-build), or --nproc-per-node cpu");
    }
    return gpus;
  }
  if (word == "cpu" || word == "auto") {
    if (wasCounted) return std::max(counted->second.cpus, 1);
    if (h.cpus > 0) return h.cpus;  // a Slurm node: the job's CPUs there
    if (!h.local) {
      return invalidUsage("--nproc-per-node " + word + ": hvdrun has no count of the CPUs of host " + h.host)
          .withHint("give the number of ranks (--nproc-per-node N)");
    }
    return std::max(facts.localCpuCount, 1);
  }
  return invalidUsage("--nproc-per-node " + word + " is not gpu, cpu, auto or a number");
}

}  // namespace

std::string_view roleName(Role role) {
  switch (role) {
    case Role::kWorker: return "worker";
    case Role::kChief: return "chief";
    case Role::kPs: return "ps";
    case Role::kEvaluator: return "evaluator";
  }
  return "worker";
}

std::vector<std::string> hostsToCount(const PlanRequest& r, const MachineFacts& facts) {
  if (r.ranksPerHostWord.empty() || (r.hostList.empty() && r.hostfilePath.empty())) return {};
  if (!r.hostList.empty() && !r.hostfilePath.empty()) return {};
  auto list = r.hostList.empty() ? parseHostfile(r.hostfileText, r.hostfilePath) : parseHostList(r.hostList);
  if (!list) return {};
  std::vector<std::string> hosts;
  for (const HostSlots& hs : *list) {
    if (!isThisMachine(hs.host, facts)) hosts.push_back(hs.host);
  }
  return hosts;
}

Result<Plan> buildPlan(const PlanRequest& r, const slurm::Environment& env, const MachineFacts& facts) {
  Plan plan;
  plan.tfConfig = r.tfConfig;
  plan.networkInterface = r.networkInterface;
  plan.bindTo = r.bindTo;
  plan.runtimeVariables = r.runtimeVariables;
  if (r.numProc < 0) return invalidArgument("-np must be at least 1");
  if (!r.hostList.empty() && !r.hostfilePath.empty()) {
    return invalidUsage("-H and --hostfile both name the hosts: give one of them")
        .withHint("-H suits a few hosts, --hostfile many");
  }
  auto local = localDevices(env, facts);
  if (!local) return local.status();

  if (!r.hostList.empty() || !r.hostfilePath.empty()) {
    auto list = r.hostList.empty() ? parseHostfile(r.hostfileText, r.hostfilePath) : parseHostList(r.hostList);
    if (!list) {
      return list.status().withHint(r.hostList.empty() ? "hostfile lines are 'host slots=N', 'host:N' or 'host'; # starts a comment"
                                                       : "write -H host:slots,host:slots, e.g. -H node01:4,node[02-03]:4");
    }
    plan.source = r.hostList.empty() ? HostSource::kHostfile : HostSource::kHostList;
    plan.sourceDetail = r.hostList.empty() ? "hostfile " + r.hostfilePath : "-H " + describeHosts(*list);
    HVD_RETURN_IF_ERROR(hostsFromList(*list, *local, plan, facts, r.hostList.empty() ? "the hostfile" : "-H"));
  } else if (auto allocation = r.noSlurm ? Result<std::optional<slurm::Allocation>>(std::nullopt)
                                         : slurm::allocationFromEnvironment(env);
             !allocation) {
    return allocation.status()
        .withContext("reading the Slurm allocation")
        .withHint("--no-slurm ignores the allocation; -H or --hostfile name hosts instead");
  } else if (allocation->has_value()) {
    HVD_RETURN_IF_ERROR(hostsFromSlurm(**allocation, facts, plan));
  } else if (auto scheduler = schedulerHosts(env, r.pbsNodefileText); !scheduler) {
    return scheduler.status().withHint("-H or --hostfile name the hosts instead");
  } else if (scheduler->has_value()) {
    SchedulerHosts& given = **scheduler;
    plan.source = given.source;
    plan.sourceDetail = given.detail;
    HVD_RETURN_IF_ERROR(hostsFromList(given.hosts, *local, plan, facts,
                                      given.source == HostSource::kPbs ? "PBS_NODEFILE" : "LSB_MCPU_HOSTS"));
  } else {
    if (r.numProc == 0 && r.ranksPerHost == 0 && r.ranksPerHostWord.empty()) {
      return invalidUsage("how many ranks? -np is missing").withHint("e.g. hvdrun -np 4 ./train");
    }
    plan.source = HostSource::kLocal;
    plan.sourceDetail = "this machine";
    HostPlan h;
    h.host = facts.hostname;
    h.slots = r.numProc > 0 ? r.numProc : std::max(r.ranksPerHost, 1);  // a word's count: below
    h.slotsGiven = r.numProc > 0 || r.ranksPerHost > 0;
    h.local = true;
    h.devices = *local;
    h.devicesKnown = true;
    plan.hosts.push_back(std::move(h));
  }

  if (r.nnodes > 0 && plan.hosts.size() != static_cast<size_t>(r.nnodes)) {
    return invalidUsage("--nnodes " + std::to_string(r.nnodes) + ", but " + plan.sourceDetail + " is " +
                        std::to_string(plan.hosts.size()) + (plan.hosts.size() == 1 ? " host" : " hosts"))
        .withHint("hvdrun starts every host's ranks itself from one command: leave --nnodes out, or give that many "
                  "hosts");
  }
  // torchrun's --nproc-per-node: every host that many, whatever more slots it has (and a
  // host named without a count, torchrun's way, as many as it asks).
  if (r.ranksPerHost > 0) {
    for (HostPlan& h : plan.hosts) {
      if (h.slots < r.ranksPerHost && h.slotsGiven) {
        return invalidUsage("--nproc-per-node " + std::to_string(r.ranksPerHost) + " is more than the " +
                            std::to_string(h.slots) + " slot(s) of host " + h.host)
            .withHint("lower --nproc-per-node, or give that host more slots (-H host:slots)");
      }
      h.slots = r.ranksPerHost;
    }
  }
  if (!r.ranksPerHostWord.empty()) {
    for (HostPlan& h : plan.hosts) {
      auto count = ranksForWord(r, facts, h);
      if (!count) return count.status();
      if (h.slots < *count && h.slotsGiven) {
        return invalidUsage("--nproc-per-node " + r.ranksPerHostWord + " asks for " + std::to_string(*count) +
                            " ranks on host " + h.host + ", more than its " + std::to_string(h.slots) + " slot(s)")
            .withHint("give the number of ranks (--nproc-per-node N), or that host more slots (-H host:slots)");
      }
      h.slots = *count;
    }
  }
  // -H hosts as the counts above left them: "-H a:1,b:1" beside their 4 slots read wrong.
  if (plan.source == HostSource::kHostList && (r.ranksPerHost > 0 || !r.ranksPerHostWord.empty())) {
    std::vector<HostSlots> given;
    for (const HostPlan& h : plan.hosts) given.push_back({h.host, h.slots});
    plan.sourceDetail = "-H " + describeHosts(given);
  }
  long long totalSlots = 0;
  for (const HostPlan& h : plan.hosts) totalSlots += h.slots;
  int np = r.numProc == 0 ? static_cast<int>(std::min<long long>(totalSlots, 1 << 24)) : r.numProc;
  if (np > totalSlots) {
    return invalidUsage("-np " + std::to_string(np) + " is more than the " + std::to_string(totalSlots) +
                        " slot(s) of " + plan.sourceDetail)
        .withHint("lower -np, or give more hosts or slots (-H host:slots)");
  }
  std::vector<HostSlots> slots;
  slots.reserve(plan.hosts.size());
  for (const HostPlan& h : plan.hosts) slots.push_back({h.host, h.slots});
  for (RankAssignment& a : placeRanks(slots, np)) {
    RankPlan rank;
    rank.where = std::move(a);
    plan.ranks.push_back(std::move(rank));
  }
  std::vector<std::vector<RankPlan*>> ranksByHost(plan.hosts.size());
  {
    size_t h = 0;
    for (RankPlan& rank : plan.ranks) {
      while (plan.hosts[h].host != rank.where.host) ++h;
      ++plan.hosts[h].ranks;
      ranksByHost[h].push_back(&rank);
    }
  }
  HVD_RETURN_IF_ERROR(assignRoles(r, plan));
  HVD_RETURN_IF_ERROR(assignGpus(r, plan, ranksByHost));

  plan.masterAddr = plan.ranks.front().where.host;
  bool allLocal = std::all_of(plan.hosts.begin(), plan.hosts.end(), [](const HostPlan& h) { return h.ranks == 0 || h.local; });
  plan.rendezvousAddr = allLocal ? "127.0.0.1" : facts.hostname;
  plan.rendezvousPort = facts.rendezvousPort;
  if (plan.source == HostSource::kSlurm) {
    // Every rank derives the same port from the job id, with no coordination needed.
    uint64_t id = 0;
    std::from_chars(plan.slurmJobId.data(), plan.slurmJobId.data() + plan.slurmJobId.size(), id);
    plan.masterPort = 20000 + static_cast<int>(id % 10000);
  } else {
    plan.masterPort = facts.freePort;
  }
  return plan;
}

}  // namespace hvd::cli
