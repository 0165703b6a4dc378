// cli/launch/srun_launcher.cc: the srun command line and what its messages mean.
#include "cli/launch/srun_launcher.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <string_view>

#include "cli/launch/task_shim.h"
#include "cli/plan/plan_output.h"

namespace hvd::cli {

std::string srunHostfile(const Plan& plan) {
  std::string out;
  out.reserve(plan.ranks.size() * 12);
  for (const RankPlan& r : plan.ranks) (out += r.where.host) += '\n';
  return out;
}

SrunCommand srunCommand(const Plan& plan, const Options& o, const std::string& hvdrunPath,
                        const std::string& hostfilePath, const std::vector<std::string>& jobWide, bool insideStep) {
  SrunCommand c;
  c.argv = {"srun", "--ntasks=" + std::to_string(plan.ranks.size()), "--distribution=arbitrary",
            o.minNp > 0 ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1", "--label",
            // One Ctrl-C ends the step (srun alone would only print the tasks' state).
            "--quit-on-interrupt"};
  // A second step inside a running one (srun inside srun) would wait for free CPUs forever.
  if (insideStep) c.argv.push_back("--overlap");
  // srun copies its stdin to every task unless told otherwise; hvdrun gives it to one.
  c.argv.push_back("--input=" + (o.stdinRank ? std::to_string(*o.stdinRank) : std::string("none")));
  // MPI programs started by srun get their ranks and addresses from Slurm's PMIx server.
  if (o.pmix) c.argv.push_back("--mpi=pmix");
  // Slurm's own binding (its task/affinity plugin): each task to the cores it was given.
  // srun has no overload qualifier: it places tasks that outnumber their cores itself.
  if (plan.bindTo != BindTo::kNone) c.argv.push_back(plan.bindTo == BindTo::kSocket ? "--cpu-bind=sockets" : "--cpu-bind=cores");
  c.argv.push_back(hvdrunPath);
  // The shim rebuilds the same plan on its node and stays as the rank's parent (task_shim.h).
  for (auto& a : execRankArguments(o)) c.argv.push_back(std::move(a));
  c.env = {"SLURM_HOSTFILE=" + hostfilePath, "HVD_PLAN_HOSTS=" + planHostsSpec(plan)};
  if (std::string gpus = planGpusSpec(plan); !gpus.empty()) c.env.push_back("HVD_PLAN_GPUS=" + gpus);
  c.env.insert(c.env.end(), jobWide.begin(), jobWide.end());
  return c;
}

std::optional<RankFailure> firstSrunFailure(const std::vector<std::string>& messages) {
  static const std::regex kTask(R"(^srun: error: ([^:]+): tasks? (\d+)(?:-\d+)?: (.*)$)");
  static const std::regex kExit(R"(^Exited with exit code (\d+)$)");
  for (const std::string& line : messages) {
    std::smatch m;
    if (!std::regex_match(line, m, kTask)) continue;
    RankFailure f;
    f.host = m[1];
    f.rank = std::stoi(m[2]);
    std::string what = m[3];
    std::smatch e;
    if (std::regex_match(what, e, kExit)) {
      f.exitCode = std::stoi(e[1]);
      return f;
    }
    for (int sig = 1; sig < 65; ++sig) {
      const char* text = ::strsignal(sig);
      if (text != nullptr && what == text) {
        f.signal = sig;
        return f;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> srunTroubleHint(const std::vector<std::string>& messages) {
  auto says = [&messages](std::string_view words) {
    return std::any_of(messages.begin(), messages.end(),
                       [words](const std::string& line) { return line.find(words) != std::string::npos; });
  };
  // First the controller: a timed-out confirmation is also followed by "Expired or invalid job".
  if (says("Socket timed out") || says("Unable to contact slurm controller")) {
    return "the Slurm controller (slurmctld) did not answer srun in time: 'scontrol ping' says whether it is up; no "
           "rank was started by this step";
  }
  if (says("has expired") || says("Invalid job id") || says("Expired or invalid job")) {
    return "the Slurm job in this shell's SLURM_JOB_ID has ended (variables left from an old salloc or job?): get a "
           "new allocation, or run on this machine alone with --no-slurm";
  }
  return std::nullopt;
}

}  // namespace hvd::cli
