// cli/launch/launcher.h: how a job's ranks are started, behind one interface: hvdrun forks
// them (local), one srun step runs them inside a Slurm allocation (srun), Open MPI's mpirun
// does (--mpi), or a host agent per host over ssh does (ssh). chooseLauncher() is the one
// place that knows which launchers there are and picks one; the job (cli/job) sees only
// this interface. Each launcher owns what is its own: its command line, the labels of its
// output lines, and how it turns its ending into the job's root cause.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/elastic/elastic_options.h"
#include "cli/launch/torch_error_file.h"
#include "cli/options/options.h"
#include "cli/plan/plan.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/supervise/rank_environment.h"
#include "cli/supervise/supervision.h"
#include "slurm/environment.h"

namespace hvd::cli {

// One start of the job, as the job hands it to its launcher.
struct JobStart {
  const Options& options;
  const Plan& plan;  // restartCount says which start this is; rendezvousPort is the server's
  const slurm::Environment& env;
  RendezvousServer& server;
  JobVariables job;       // the secret and the preemption notice every rank gets
  std::string shmPrefix;  // the job's /dev/shm names (shm_names.h)
  // How the job wants its processes watched (output, grace, preemption, start timeout); the
  // launcher adds what is its own (what the processes are, their labels, elastic training).
  // Called once the launcher is about to start them: it makes --output-filename's directory
  // (UserError when it cannot).
  std::function<SupervisorOptions()> supervision;
};

class Launcher {
 public:
  virtual ~Launcher() = default;

  // "local", "srun", "mpirun" or "ssh".
  virtual std::string_view name() const = 0;
  // Who starts the ranks, for what elastic jobs may ask (elastic_options.h).
  virtual RankStarter starter() const = 0;
  // Once, before the first start and before any thread runs: what the launcher must have
  // (srun, mpirun or ssh on PATH) or set up (the guardian that outlives hvdrun). May change
  // the plan's rendezvous address (ranks on other hosts reach hvdrun at another one).
  // UserError when it cannot launch.
  virtual void prepare(Plan& plan, const std::string& shmPrefix) = 0;
  // One start: blocks until every rank has ended, and returns the outcome with its root
  // cause adopted (a launcher's own failure, a task shim's report). UserError when nothing
  // could start (the hosts' table of an ssh launch).
  virtual JobOutcome start(JobStart& start) = 0;
  // torch's @record exception of the rank that failed first, where one was written.
  virtual std::optional<RecordedError> recordedError(const JobOutcome& outcome, const RendezvousServer& server) const;
};

// The launcher for this plan: mpirun with --mpi, srun inside a Slurm allocation, ssh when the
// plan puts ranks on other hosts, else hvdrun itself, which runs `program` (its path).
std::unique_ptr<Launcher> chooseLauncher(const Options& options, const Plan& plan, const std::string& program);

}  // namespace hvd::cli
