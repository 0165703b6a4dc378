// cli/job/job_plan.cc: the facts a plan needs, gathered.
#include "cli/job/job_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "cli/launch/slurm_job_query.h"
#include "cli/launch/ssh_host_counts.h"
#include "cli/options/plan_request.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"
#include "cli/plan/tf_ports.h"
#include "cli/user_error.h"
#include "runtime/backends/backend_probe.h"
#include "runtime/common/socket.h"

namespace hvd::cli {
namespace {

PlanRequest planRequestWithHostfile(const Options& o) {
  PlanRequest r = planRequestFrom(o);
  if (!o.hostfile.empty()) {
    auto text = readTextFile(o.hostfile);
    if (!text) {
      throw UserError(ExitCode::kUsage, "cannot read --hostfile: " + text.status().message(),
                      "--hostfile names a file of 'host slots=N' lines");
    }
    r.hostfileText = std::move(*text);
  }
  return r;
}

// A PBS job's node file, when no -H, hostfile or Slurm allocation names the hosts first.
void readPbsNodefile(const Options& o, const slurm::Environment& env, PlanRequest& r) {
  auto path = env.find("PBS_NODEFILE");
  if (path == env.end() || path->second.empty() || !o.hosts.empty() || !o.hostfile.empty()) return;
  if (!o.noSlurm && env.count("SLURM_JOB_ID")) return;
  auto text = readTextFile(path->second);
  if (!text) {
    throw UserError(ExitCode::kUsage, "cannot read PBS_NODEFILE: " + text.status().message(),
                    "PBS sets it to the job's node file; -H or --hostfile name the hosts instead");
  }
  r.pbsNodefileText = std::move(*text);
}

}  // namespace

Plan makePlan(const Options& o, const slurm::Environment& env) {
  PlanRequest request = planRequestWithHostfile(o);
  readPbsNodefile(o, env, request);
  MachineFacts facts;
  facts.hostname = hostName();
  // Asking the driver costs a cuInit: only when CUDA_VISIBLE_DEVICES does not already say.
  if (!o.noGpu && !env.count("CUDA_VISIBLE_DEVICES")) facts.localGpuCount = backends::countLocalGpus();
  if (!o.ranksPerHostWord.empty()) facts.localCpuCount = usableCpuCount();  // --nproc-per-node cpu or auto
  if (auto port = freeTcpPort()) facts.freePort = *port;
  if (auto port = freeTcpPort()) facts.rendezvousPort = *port;
  // Only Slurm knows what --gres gave each node: an allocation's shell is not told.
  auto jobId = env.find("SLURM_JOB_ID");
  if (!o.noGpu && !o.noSlurm && o.hosts.empty() && o.hostfile.empty() && jobId != env.end()) {
    facts.slurmNodeGpus = querySlurmJobGpus(jobId->second);
  }
  // --nproc-per-node gpu, cpu or auto with -H hosts: each counts its own first, over ssh.
  if (auto hosts = hostsToCount(request, facts); !hosts.empty()) facts.sshHostCounts = countHostsForPlan(o, hosts);
  Plan plan = valueOrThrow(buildPlan(request, env, facts));
  plan.maxRestarts = o.maxRestarts;
  return plan;
}

int chooseTfPortBase(const Options& o, const slurm::Environment& env) {
  if (!o.tfConfig || o.tfPortBase > 0) return o.tfPortBase;
  auto job = env.find("SLURM_JOB_ID");
  bool onlyHere = o.hosts.empty() && o.hostfile.empty() && (o.noSlurm || job == env.end());
  if (onlyHere) {
    int ranks = o.numProc > 0        ? o.numProc
                : o.ranksPerHost > 0 ? o.ranksPerHost
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (auto base = freeTcpPortBlock(ranks)) return *base;
  }
  // Outside this node's ephemeral range; other nodes are taken to have the same.
  PortRange ephemeral = kLinuxEphemeralPorts;
  if (auto range = ephemeralPortRange()) ephemeral = {range->first, range->second};
  return derivedTfPortBase(job != env.end() ? job->second : "", static_cast<unsigned>(::getpid()), ephemeral);
}

void requireFreeTfPorts(const Plan& plan) {
  if (!plan.tfConfig) return;
  const std::string here = hostName();
  for (const RankPlan& rank : plan.ranks) {
    if (rank.where.host != here || tcpPortFree(rank.tfPort)) continue;
    throw UserError(ExitCode::kEnvironment,
                    fmt::format("TF_CONFIG port {} (rank {}'s, on {}) is in use", rank.tfPort, rank.where.rank, here),
                    "another job or process holds it; choose another --tf-port-base, or leave the flag out and "
                    "hvdrun picks free ports");
  }
}

}  // namespace hvd::cli
