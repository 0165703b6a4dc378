// cli/commands/host_agent_command.h: `hvdrun host-agent`, what hvdrun starts on each host
// of an ssh launch (one per host, over one ssh connection). It reads the host's job from
// stdin (agent_protocol.h), starts those ranks in hvdrun's working directory, relays their
// lines with rank prefixes, reports a failing rank at once, passes on the signals hvdrun
// sends, and stops every rank (with the guardian, so also behind shells) when its stdin
// ends: hvdrun or the connection is gone. It first says hello with its version, which is
// hvdrun's check of the host.
#pragma once

#include <string>
#include <vector>

#include "cli/supervise/agent_protocol.h"

namespace hvd::cli {

int runHostAgentCommand(const std::vector<std::string>& args);

// The parts of a rank's environment its host sets: its math libraries' threads (`threads`
// each, unless the user set them) and TensorFlow's inter-op threads for the CPUs it may use,
// and torch's error file (unless the user gave one). Returns the rank's complete
// environment, the parts laid over what it inherits.
std::vector<std::string> completeAgentRank(AgentRank& rank, int threads, int rankCpus, const std::string& errorFile);

}  // namespace hvd::cli
