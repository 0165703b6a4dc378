// cli/elastic/elastic_options.cc: the refusals, in the order a user would mend them.
#include "cli/elastic/elastic_options.h"

#include <string>
#include <utility>

#include "cli/user_error.h"

namespace hvd::cli {

void checkElasticLaunch(const Options& o, RankStarter starter) {
  if (o.minNp == 0) {
    for (const auto& [given, flag] : {std::pair{o.resetLimit >= 0, "--reset-limit"},
                                      std::pair{o.elasticTimeout > 0, "--elastic-timeout"},
                                      std::pair{o.cooldownMax > 0, "--blacklist-cooldown-range"}}) {
      if (!given) continue;
      throw UserError(ExitCode::kUsage, std::string(flag) + " is for elastic jobs, and this one has no --min-np",
                      "add --min-np N: the job then goes on while N ranks are left");
    }
    return;
  }
  const bool mpirun = starter == RankStarter::kMpirun;
  if (!o.hostDiscoveryScript.empty() && starter != RankStarter::kHvdrun) {
    throw UserError(ExitCode::kUsage,
                    "--host-discovery-script: hvdrun grows elastic jobs with ranks it starts itself (on this machine, "
                    "or over ssh with -H), and this job runs on " +
                        std::string(mpirun ? "mpirun (--mpi)" : "a Slurm allocation"),
                    mpirun ? "leave it out: --min-np alone keeps such a job going without the ranks that fail"
                             : "leave it out: --min-np alone keeps such a job going without the ranks that fail; or, "
                               "where ssh reaches the allocation's nodes, grow over ssh as horovodrun does: "
                               "--no-slurm -H node1:slots,...");
  }
  if (mpirun) {
    throw UserError(ExitCode::kUsage,
                    "--min-np: elastic jobs need hvdrun to hear of each rank's end while the others run, and "
                    "mpirun (--mpi) ends the job at the first",
                    "leave out --mpi (hvd's TCP and shared-memory collectives run elastic jobs), or --min-np "
                    "(--max-restarts N starts every rank again after a failure)");
  }
}

}  // namespace hvd::cli
