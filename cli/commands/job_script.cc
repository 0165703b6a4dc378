// cli/commands/job_script.cc: Options -> SbatchRequest (slurm/) for the #SBATCH lines,
// plus the setup and launch lines, into the template.
#include "cli/commands/job_script.h"

#include <regex>

#include "cli/plan/shell_quote.h"
#include "slurm/sbatch_directives.h"
#include "slurm/sbatch_template.h"

namespace hvd::cli {
namespace {

slurm::SbatchRequest requestFrom(const Options& o) {
  const Options::Sbatch& s = o.sbatch;
  slurm::SbatchRequest r;
  std::string program = o.program.front();
  r.jobName = s.jobName.empty() ? program.substr(program.find_last_of('/') + 1) : s.jobName;
  if (r.jobName.empty()) r.jobName = "hvdrun";
  r.ranks = o.numProc;
  r.nodes = s.nodes;
  r.ntasksPerNode = s.ntasksPerNode;
  r.gpusPerNode = s.gpusPerNode;
  r.cpusPerTask = s.cpusPerTask;
  r.time = s.time;
  r.partition = s.partition;
  r.account = s.account;
  r.qos = s.qos;
  r.constraint = s.constraint;
  r.mem = s.mem;
  if (!s.output.empty()) r.output = s.output;
  if (!s.error.empty()) r.error = s.error;
  r.signal = o.preemptSignal;
  r.signalSeconds = o.preemptSeconds;
  r.requeue = o.requeue;
  r.extraArgs = s.extraArgs;
  return r;
}

Result<std::vector<std::string>> setupLines(const Options::Sbatch& s) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::string> lines;
  for (const std::string& module : s.modules) lines.push_back("module load " + shellQuote(module));
  for (const std::string& assignment : s.env) {
    size_t eq = assignment.find('=');
    std::string name = assignment.substr(0, eq);
    if (eq == std::string::npos || !std::regex_match(name, kName)) {
      return Status(Errc::kInvalidArgument, "--env '" + assignment + "': expected NAME=value with NAME a shell variable name")
          .withHint("e.g. --env NCCL_DEBUG=WARN");
    }
    lines.push_back("export " + name + "=" + shellQuote(assignment.substr(eq + 1), true));
  }
  if (!s.venv.empty()) lines.push_back("source " + shellQuote(s.venv + "/bin/activate"));
  lines.insert(lines.end(), s.setup.begin(), s.setup.end());
  return lines;
}

}  // namespace

Result<std::string> renderJobScript(const Options& o, const JobScriptContext& context) {
  if (o.program.empty()) {
    return Status(Errc::kInvalidUsage, "no program for the job to run")
        .withHint("usage: hvdrun sbatch --dry-run [options] -- program [args...]");
  }
  slurm::SbatchRequest request = requestFrom(o);
  // torchrun's --nproc-per-node: the job's hvdrun starts that many on every node, so the job
  // asks for that many tasks a node.
  if (o.ranksPerHost > 0) {
    if (request.ntasksPerNode > 0 && request.ntasksPerNode < o.ranksPerHost) {
      return Status(Errc::kInvalidUsage, "--nproc-per-node " + std::to_string(o.ranksPerHost) + " is more than the " +
                                             std::to_string(request.ntasksPerNode) +
                                             " task(s) per node --ntasks-per-node asks Slurm for")
          .withHint("leave --ntasks-per-node out (it follows --nproc-per-node), or raise it");
    }
    if (request.ntasksPerNode == 0) request.ntasksPerNode = o.ranksPerHost;
  }
  if (o.nnodes > 0) {
    if (request.nodes > 0 && request.nodes != o.nnodes) {
      return Status(Errc::kInvalidUsage, "--nnodes " + std::to_string(o.nnodes) + " and --nodes " +
                                             std::to_string(request.nodes) + " disagree on the job's node count")
          .withHint("give one of them");
    }
    request.nodes = o.nnodes;
  }
  auto directives = slurm::sbatchDirectives(request);
  if (!directives.isOk()) return directives.status();
  auto geometry = slurm::sbatchGeometry(request);
  auto setup = setupLines(o.sbatch);
  if (!setup.isOk()) return setup.status();

  // The job's hvdrun takes every setting from this line: the config file and HVDRUN_*
  // variables were read when the script was made, and must not apply a second time.
  std::vector<std::string> launch{context.hvdrunPath, "--no-config"};
  launch.insert(launch.end(), o.launchArgs.begin(), o.launchArgs.end());
  launch.push_back("--");
  launch.insert(launch.end(), o.program.begin(), o.program.end());

  slurm::ScriptParts parts;
  parts.directives = std::move(*directives);
  parts.setup = std::move(*setup);
  parts.launch = "exec " + shellJoin(launch);
  parts.scalars = {{"job_name", request.jobName},
                   {"nodes", std::to_string(geometry->nodes)},
                   {"ntasks_per_node", std::to_string(geometry->ntasksPerNode)},
                   {"gpus_per_node", std::to_string(request.gpusPerNode)},
                   {"hvdrun", shellQuote(context.hvdrunPath)},
                   {"version", context.version}};
  return slurm::renderSbatchTemplate(context.templateText, context.templateName, parts);
}

}  // namespace hvd::cli
