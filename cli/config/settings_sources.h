// cli/config/settings_sources.h: the command line read together with the settings below
// it: the config file (--config-file, HVDRUN_CONFIG_FILE or the XDG default) and the
// HVDRUN_* variables. Precedence: command line > environment > profile > file's top level.
#pragma once

#include <string>
#include <vector>

#include "cli/options/options.h"

namespace hvd::cli {

// Reads files and the environment; throws UserError(kUsage) for any config error.
Options parseWithSettings(const std::vector<std::string>& args);

}  // namespace hvd::cli
