// cli/commands/timeline_command.h: `hvdrun timeline merge` (per-rank traces into one, as
// hvdrun does at exit) and `hvdrun timeline summary` (a table per tensor for a terminal).
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

// args excludes "hvdrun timeline". Returns the exit code; throws UserError for bad
// options (kUsage) and unreadable or malformed traces (kUsage, naming the file).
int runTimelineCommand(const std::vector<std::string>& args);

}  // namespace hvd::cli
