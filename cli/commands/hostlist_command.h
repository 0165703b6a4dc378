// cli/commands/hostlist_command.h: `hvdrun hostlist`, scontrol's hostlist tools for
// machines without Slurm (containers, laptops): expand, compress, sort, count.
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

// args excludes "hvdrun hostlist". Reads stdin when no expression is given. Returns the
// exit code; throws UserError for bad options or an invalid hostlist.
int runHostlistCommand(const std::vector<std::string>& args);

}  // namespace hvd::cli
