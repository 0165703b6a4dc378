// cli/commands/sbatch_command.cc: reads the template, renders, prints or submits.
#include "cli/os/console.h"
#include "cli/commands/sbatch_command.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cli/build_info.h"
#include "cli/commands/job_script.h"
#include "cli/config/settings_sources.h"
#include "cli/elastic/elastic_options.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"
#include "cli/user_error.h"
#include "templates/embedded_templates.h"

namespace hvd::cli {
namespace {

constexpr const char* kUsage = "usage: hvdrun sbatch (--dry-run|--submit) [options] -- program [args...]";

// sbatch --parsable prints "id" or "id;cluster".
std::string submit(const std::string& script) {
  if (!findExecutable("sbatch", searchPath()).isOk()) {
    throw UserError(ExitCode::kEnvironment, "--submit needs Slurm's sbatch, which is not in PATH",
                    "run on a cluster login node, or use --dry-run and submit the script yourself");
  }
  RunOptions options;
  options.timeout = std::chrono::seconds(120);
  options.stdinText = script;
  CapturedRun run = valueOrThrow(runAndCapture({"sbatch", "--parsable"}, options));
  std::string err = run.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  if (!run.succeeded()) {
    throw UserError(ExitCode::kEnvironment,
                    "sbatch refused the job" + (err.empty() ? std::string() : ":\n" + err),
                    "'hvdrun sbatch --dry-run' with the same options shows the script sbatch was given");
  }
  std::string id = run.out.substr(0, run.out.find_first_of(";\n"));
  if (id.empty()) throw UserError(ExitCode::kEnvironment, "sbatch printed no job id: '" + run.out + "'");
  return id;
}

}  // namespace

int runSbatchCommand(const std::vector<std::string>& args) {
  Options o = parseWithSettings(withSbatchShortOptions(args));
  if (o.help) {
    printTo(stdout, "{}\n{}", o.helpText, kSbatchShortOptionsHelp);
    return 0;
  }
  // The job script's hvdrun is not given these (kNotSettings): say so here, once.
  for (const std::string& note : o.notes) printTo(stderr, "hvdrun: note: {}\n", note);
  if (o.dryRun == o.sbatch.submit) {
    throw UserError(ExitCode::kUsage,
                    o.dryRun ? "--dry-run and --submit exclude each other" : "hvdrun sbatch needs --dry-run or --submit",
                    "--dry-run prints the job script, --submit hands it to sbatch; " + std::string(kUsage));
  }
  for (const char* key : {"hosts", "hostfile", "no-slurm"}) {
    if (o.givenOnCommandLine.count(key) != 0) {
      throw UserError(ExitCode::kUsage, std::string("--") + key + " cannot be used in a job script",
                      "inside the job hvdrun places ranks on the nodes Slurm gave it; ask for them with --nodes "
                      "and --ntasks-per-node or --gpus-per-node");
    }
  }
  // The job script's hvdrun runs on the allocation: what it would refuse there is refused now.
  checkElasticLaunch(o, o.useMpi ? RankStarter::kMpirun : RankStarter::kSrun);
  std::string templateName = "sbatch.sh";
  std::string templateText;
  if (!o.sbatch.templateFile.empty()) {
    auto text = readTextFile(o.sbatch.templateFile);
    if (!text) {
      throw UserError(ExitCode::kUsage, "cannot read --template: " + text.status().message(),
                      "--template names a job-script template (docs/sbatch.md)");
    }
    templateName = o.sbatch.templateFile;
    templateText = std::move(*text);
  } else {
    templateText = std::string(*templates::embeddedTemplate("sbatch.sh"));
  }
  JobScriptContext context{thisExecutable(), build_info::kVersion, templateText, templateName};
  std::string script = valueOrThrow(renderJobScript(o, context));
  if (o.dryRun) {
    printTo(stdout, "{}", script);
    return 0;
  }
  printTo(stdout, "{}\n", submit(script));
  return 0;
}

}  // namespace hvd::cli
