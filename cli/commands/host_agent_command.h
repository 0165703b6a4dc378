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

namespace hvd::cli {

int runHostAgentCommand(const std::vector<std::string>& args);

}  // namespace hvd::cli
