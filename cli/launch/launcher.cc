// cli/launch/launcher.cc: the one place that knows the launchers.
#include "cli/launch/launcher.h"

#include "cli/launch/local_launcher.h"
#include "cli/launch/mpirun_launcher.h"
#include "cli/launch/srun_launcher.h"
#include "cli/launch/ssh_launcher.h"
#include "cli/rendezvous/launcher_reports.h"

namespace hvd::cli {

std::optional<RecordedError> Launcher::recordedError(const JobOutcome& outcome, const RendezvousServer& server) const {
  // A rank on another node: its task shim or host agent handed the exception over.
  if (!outcome.firstFailure) return std::nullopt;
  auto text = server.value(recordedErrorKey(outcome.firstFailure->rank));
  if (!text) return std::nullopt;
  return decodeRecordedError(*text);
}

std::unique_ptr<Launcher> chooseLauncher(const Options& options, const Plan& plan, const std::string& program) {
  if (options.useMpi) return makeMpirunLauncher();
  // Inside a Slurm allocation one srun step runs the plan (never ssh there).
  if (plan.source == HostSource::kSlurm) return makeSrunLauncher();
  if (ranksElsewhere(plan)) return makeSshLauncher(options);
  return makeLocalLauncher(options, program);
}

}  // namespace hvd::cli
