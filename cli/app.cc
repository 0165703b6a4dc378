// cli/app.cc: dispatch from parsed options to --version, --check-build or a launch.
#include "cli/app.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "cli/build_info.h"
#include "cli/check_build.h"
#include "cli/commands/hostlist_command.h"
#include "cli/launch/supervisor.h"
#include "cli/options.h"
#include "cli/os/subprocess.h"
#include "cli/plan/rank_plan.h"
#include "cli/user_error.h"
#include "runtime/backends/backend_probe.h"

extern char** environ;

namespace hvd::cli {
namespace {

std::string versionText() {
  std::string backends;
  for (const auto& entry : backends::registeredBackends()) {
    if (entry.compiled) backends += (backends.empty() ? "" : " ") + std::string(entry.id);
  }
  std::string text = fmt::format("hvdrun {}\ncommit: {}\ncompiler: {}\nbuild type: {}\nbackends compiled in: {}\n",
                                 build_info::kVersion, build_info::kGitCommit, build_info::kCompiler,
                                 build_info::kBuildType, backends);
  if (build_info::kSanitizers[0] != '\0') text += fmt::format("sanitizers: {}\n", build_info::kSanitizers);
  return text;
}

std::string localHostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name) != 0) return "localhost";
  return name;
}

// The parent environment minus variables a rank must not inherit from an outer job.
std::vector<std::string> inheritedEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& o : overrides) overridden |= o.compare(0, name.size() + 1, name + "=") == 0;
    if (!overridden) env.push_back(std::move(kv));
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

void printFailureSummary(const JobOutcome& outcome, int total) {
  const RankFailure& f = *outcome.firstFailure;
  std::string how = f.signal != 0 ? fmt::format("was killed by {}", signalName(f.signal))
                                  : fmt::format("exited with code {}", f.exitCode);
  std::string text = fmt::format(
      "hvdrun: error: rank {} {} (host {}, pid {}, at {})\n", f.rank, how, f.host, f.pid, f.when);
  if (!f.lastStderrLines.empty()) {
    text += fmt::format("  last lines of rank {}'s stderr:\n", f.rank);
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  } else {
    text += fmt::format("  rank {} wrote nothing to stderr\n", f.rank);
  }
  text += fmt::format("  hvdrun stopped {} other rank(s) of {}; exit code {}\n", outcome.ranksStopped, total,
                      outcome.exitCode);
  fmt::print(stderr, "{}", text);
}

int launch(const Options& o) {
  if (o.program.empty()) {
    throw UserError(ExitCode::kUsage, "no program to run",
                    "usage: hvdrun -np N program [args...]; see 'hvdrun --help'");
  }
  if (o.numProc == 0) {
    throw UserError(ExitCode::kUsage, "how many ranks? -np is missing",
                    fmt::format("e.g. hvdrun -np 4 {}", o.program.front()));
  }
  const char* path = std::getenv("PATH");
  auto exe = findExecutable(o.program.front(), path != nullptr ? path : "");
  if (!exe) {
    throw UserError(ExitCode::kEnvironment, "cannot run the program: " + exe.status().message(),
                    "nothing was started; check the program's name, PATH and its execute permission");
  }
  std::string host = localHostname();
  std::vector<RankAssignment> plan = placeRanks({{host, o.numProc}}, o.numProc);
  std::vector<RankProcess> ranks;
  for (const RankAssignment& r : plan) {
    ranks.push_back({r.rank, r.host, *exe, o.program, inheritedEnvironment(rankEnvironment(r))});
  }
  SupervisorOptions supervision;
  supervision.prefixOutput = o.prefixOutput;
  supervision.killGrace = o.killGrace;
  JobOutcome outcome = valueOrThrow(superviseRanks(ranks, supervision));
  if (outcome.interruptSignal != 0) {
    fmt::print(stderr, "hvdrun: interrupted by {}; stopped {} rank(s)\n", signalName(outcome.interruptSignal),
               outcome.ranksStopped);
  } else if (outcome.firstFailure) {
    printFailureSummary(outcome, static_cast<int>(ranks.size()));
  }
  return outcome.exitCode;
}

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Subcommands are recognised only as the first word, so a program named like one can
  // still be launched as ./hostlist or after an option (hvdrun -np 2 hostlist).
  if (!args.empty() && args[0] == "hostlist") return runHostlistCommand({args.begin() + 1, args.end()});
  Options o = parseOptions(args);
  if (o.help) {
    fmt::print("{}", o.helpText);
    return 0;
  }
  if (o.showVersion) {
    fmt::print("{}", versionText());
    return 0;
  }
  if (o.checkBuild) {
    fmt::print("{}", renderBuildReport(collectBuildReport(), o.verbose));
    return 0;
  }
  return launch(o);
}

}  // namespace hvd::cli
