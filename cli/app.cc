// cli/app.cc: dispatch. The subcommands by their first word, then --help, --version,
// --check-build, and for everything else the plan: printed (--dry-run, `hvdrun plan`) or
// run as a job (cli/job).
#include "cli/app.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands/check_build.h"
#include "cli/commands/exec_rank_command.h"
#include "cli/commands/host_agent_command.h"
#include "cli/commands/hostlist_command.h"
#include "cli/commands/sbatch_command.h"
#include "cli/commands/timeline_command.h"
#include "cli/config/settings_sources.h"
#include "cli/job/job.h"
#include "cli/job/job_plan.h"
#include "cli/options/options.h"
#include "cli/os/console.h"
#include "cli/plan/plan_output.h"
#include "cli/user_error.h"
#include "slurm/environment.h"

extern char** environ;

namespace hvd::cli {
namespace {

int planOrLaunch(const Options& given) {
  Options o = given;
  takeSbatchOptionsInLaunch(o);
  for (const std::string& note : o.notes) printTo(stderr, "hvdrun: note: {}\n", note);
  // -x: hvdrun's own environment first, so what it derives from it (OMP_NUM_THREADS's default
  // for shared CPUs, the environment every rank inherits) sees the value.
  for (const std::string& kv : o.exportedVariables) {
    const size_t eq = kv.find('=');
    ::setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
  }
  slurm::Environment env = slurm::environmentFrom(environ);
  o.tfPortBase = chooseTfPortBase(o, env);
  std::optional<PlanFormat> format;
  if (o.dryRun) format = valueOrThrow(parsePlanFormat(o.format));
  if (!o.dryRun && o.program.empty()) {
    throw UserError(ExitCode::kUsage, "no program to run", "usage: hvdrun -np N program [args...]; see 'hvdrun --help'");
  }
  Plan plan = makePlan(o, env);
  requireFreeTfPorts(plan);
  // horovodrun's rule: a job that discovers hosts is elastic, at least -np ranks by default.
  if (!o.hostDiscoveryScript.empty() && o.minNp == 0) o.minNp = static_cast<int>(plan.ranks.size());
  if (o.dryRun) {
    printTo(stdout, "{}", valueOrThrow(renderPlan(plan, *format, o.rank, o.program)));
    return 0;
  }
  return runJob(o, plan, env);
}

int planCommand(const std::vector<std::string>& args) {
  Options o = parseWithSettings(args);
  if (o.help) {
    printTo(stdout, "{}", o.helpText);
    return 0;
  }
  o.dryRun = true;
  return planOrLaunch(o);
}

// Subcommands are recognised only as the first word, so a program named like one can still
// be launched as ./hostlist or after an option (hvdrun -np 2 hostlist).
struct Subcommand {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
};
constexpr Subcommand kSubcommands[] = {
    {"hostlist", runHostlistCommand},   {"timeline", runTimelineCommand},     {"sbatch", runSbatchCommand},
    {"exec-rank", runExecRankCommand},  {"host-agent", runHostAgentCommand},  {"plan", planCommand},
};

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const Subcommand& sub : kSubcommands) {
    if (!args.empty() && args[0] == sub.name) return sub.run({args.begin() + 1, args.end()});
  }
  Options o = parseWithSettings(args);
  if (o.help) {
    printTo(stdout, "{}", o.helpText);
    return 0;
  }
  if (o.showVersion) {
    printTo(stdout, "{}", versionText());
    return 0;
  }
  if (o.checkBuild) {
    printTo(stdout, "{}", renderBuildReport(collectBuildReport(), o.verbose));
    return 0;
  }
  return planOrLaunch(o);
}

}  // namespace hvd::cli
