// cli/commands/job_script.h: a Slurm job script for a launch, from parsed options and a
// template. The script runs `hvdrun` with the same launch options; every user word (the
// program, its arguments, paths, exported values) is shell-quoted, so it reaches the job
// byte for byte, and no value can start a command of its own.
#pragma once

#include <string>
#include <string_view>

#include "cli/options/options.h"
#include "runtime/common/status.h"

namespace hvd::cli {

struct JobScriptContext {
  std::string hvdrunPath;  // what the launch line runs
  std::string version;     // for the header comment
  std::string_view templateText;
  std::string templateName;  // for messages: "sbatch.sh" or the user's --template path
};

// kInvalidArgument / kInvalidUsage name the offending option and value (an export that is
// not NAME=value, -np that does not fit, an #SBATCH value sbatch would misread, a bad
// template placeholder).
Result<std::string> renderJobScript(const Options& options, const JobScriptContext& context);

}  // namespace hvd::cli
