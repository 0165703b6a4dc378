// slurm/sbatch_template.h: fills a job-script template's {{placeholders}}. The set of
// placeholders is fixed and documented (docs/sbatch.md); an unknown one is an error rather
// than text left in a script that would then fail on the cluster, hours later.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::slurm {

// Placeholders: {{directives}} (the #SBATCH lines), {{setup}} (module, export and
// activation lines), {{launch}} (the line that runs hvdrun; required), and the scalars
// {{job_name}}, {{nodes}}, {{ntasks_per_node}}, {{gpus_per_node}}, {{hvdrun}},
// {{version}}. Spaces inside the braces are allowed ({{ launch }}).
struct ScriptParts {
  std::vector<std::string> directives;
  std::vector<std::string> setup;
  std::string launch;
  std::map<std::string, std::string> scalars;  // name -> text
};

// kInvalidArgument as "name:line:col: unknown placeholder '{{x}}' (did you mean ...)",
// for an unclosed "{{", or when {{launch}} is missing. `name` is the template's file name.
Result<std::string> renderSbatchTemplate(std::string_view templateText, const std::string& name,
                                         const ScriptParts& parts);

}  // namespace hvd::slurm
