// cli/job/job.cc: a job's starts, and what hvdrun says after each.
#include "cli/job/job.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "cli/job/job_checks.h"
#include "cli/job/job_report.h"
#include "cli/job/preemption.h"
#include "cli/job/timelines.h"
#include "cli/launch/launcher.h"
#include "cli/os/console.h"
#include "cli/rendezvous/rendezvous_server.h"
#include "cli/user_error.h"
#include "runtime/common/hex.h"
#include "runtime/common/shm_names.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {
namespace {

// The job's rendezvous server, started before any rank; the plan learns its real port.
std::unique_ptr<RendezvousServer> startRendezvous(Plan& plan, const std::string& secret) {
  // Ranks all on this machine reach it over loopback: nothing else needs to; an ssh launch's
  // chosen address is the only one it listens on (srun's ranks, given a host name, use the
  // address they were launched from, so every interface).
  auto server = RendezvousServer::start(0, secret, listenAddressFor(plan.rendezvousAddr));
  if (!server) throw UserError(ExitCode::kEnvironment, server.status().message());
  plan.rendezvousPort = (*server)->port();
  return std::move(*server);
}

// How a start's processes are watched: the output options, the grace, the preemption notice
// and the start timeout; the launcher adds its own.
SupervisorOptions supervisionFor(const Options& o, const Plan& plan, RendezvousServer& server,
                                 const PreemptionFlag& preemption) {
  SupervisorOptions supervision;
  supervision.rankCount = static_cast<int>(plan.ranks.size());
  supervision.prefixOutput = o.prefixOutput;
  supervision.killGrace = o.killGrace;
  supervision.preemptSignal = preemption.signalNumber();
  supervision.onPreempt = [&preemption] { preemption.raise(); };
  if (o.requeue) supervision.preemptGrace = o.preemptGrace;
  applyOutputOptions(o, supervision);
  supervision.appendOutputFiles = plan.restartCount > 0;  // the failed starts' output stays
  supervision.startTimeout = o.startTimeout;
  supervision.readyRanks = [&server] { return server.readyRanks(); };
  supervision.peerGoneOf = [&server](int rank) -> std::optional<int> {
    auto text = server.value(rendezvous::peerGoneKey(rank));
    return text ? rendezvous::parsePeerGone(*text) : std::nullopt;
  };
  return supervision;
}

// Whether --max-restarts may start the job again after this outcome: a rank failed, and
// neither the user (Ctrl-C, a signal to hvdrun), a preemption notice nor a console gone away
// (its reader quit) ended the job, which a restart would only repeat or go against.
bool restartable(const JobOutcome& outcome) {
  return outcome.exitCode != 0 && outcome.firstFailure.has_value() && outcome.interruptSignal == 0 &&
         !outcome.preempted && outcome.consoleClosed.empty() && outcome.agentStartProblems.empty();
}

}  // namespace

int runJob(const Options& o, Plan plan, const slurm::Environment& env) {
  const std::string program = checkProgram(o);
  // The job's secret: in the ranks' environment only, never on a command line or in a plan.
  const std::string secret = valueOrThrow(randomHex(32));
  const std::string shmPrefix = shmJobPrefix(secret);
  std::unique_ptr<Launcher> launcher = chooseLauncher(o, plan, program);
  // A config file may carry srun's options for the jobs that run under Slurm.
  if (!o.srunArgs.empty() && launcher->starter() != RankStarter::kSrun) {
    printTo(stderr, "hvdrun: note: --srun-args changes nothing here: the ranks start without srun (the hosts come "
                    "from {})\n", plan.sourceDetail);
  }
  checkStdinRank(o, plan);
  checkRanksFilter(o, plan);
  checkElastic(o, plan, launcher->starter());
  checkTimelinePath(o);
  launcher->prepare(plan, shmPrefix);
  PreemptionFlag preemption(o, env);
  std::unique_ptr<RendezvousServer> server;
  JobOutcome outcome;
  bool toldByRanks = false;
  std::string summaries;  // every start's report, for --output-filename's summary
  const int ranks = static_cast<int>(plan.ranks.size());
  for (;; ++plan.restartCount) {
    server.reset();  // the last start's, before the next one listens
    server = startRendezvous(plan, secret);
    JobStart start{o,
                   plan,
                   env,
                   *server,
                   JobVariables{secret, preemption.path(), preemption.signal()},
                   shmPrefix,
                   [&o, &plan, &server, &preemption] { return supervisionFor(o, plan, *server, preemption); }};
    outcome = launcher->start(start);
    // What ranks killed mid-set-up left in this machine's /dev/shm (nothing uses it now).
    removeShmObjects(shmPrefix);
    // A notice sent to the ranks directly (scancel --signal=USR2) reaches hvdrun this way.
    toldByRanks = !outcome.preempted && server->value(rendezvous::kPreemptedKey);
    outcome.preempted |= toldByRanks;
    std::string summary = reportText(outcome, ranks, launcher->recordedError(outcome, *server));
    printTo(stderr, "{}", summary);
    summaries += summary;
    if (!restartable(outcome)) break;
    if (plan.restartCount >= plan.maxRestarts) {
      if (plan.maxRestarts > 0) {
        std::string end = fmt::format("hvdrun: the job failed in each of its {} starts (--max-restarts {})\n",
                                      plan.maxRestarts + 1, plan.maxRestarts);
        printTo(stderr, "{}", end);
        summaries += end;
      }
      break;
    }
    if (!o.timelineFile.empty()) keepStartTimeline(o.timelineFile, ranks, plan.restartCount, plan.maxRestarts + 1, summaries);
    std::string restart = fmt::format("hvdrun: starting every rank again: restart {} of {} (--max-restarts)\n",
                                      plan.restartCount + 1, plan.maxRestarts);
    printTo(stderr, "{}", restart);
    summaries += restart;
  }
  if (!o.timelineFile.empty()) mergeTimeline(o.timelineFile, ranks);
  keepSummary(o.outputDir, summaries);
  finishPreemption(o, outcome, toldByRanks, env);
  if (std::string last = incompleteOutputText(outcome, o.outputDir); !last.empty()) {
    printTo(stderr, "{}", last);
    // The job's own failure says more; a job that succeeded must still not look complete.
    if (outcome.exitCode == 0) return static_cast<int>(ExitCode::kEnvironment);
  }
  return outcome.exitCode;
}

}  // namespace hvd::cli
