// cli/os/machine.h: small facts about this machine that planning needs.
#pragma once

#include <string>

#include "runtime/common/status.h"

namespace hvd::cli {

// gethostname(), or "localhost" when it fails.
std::string hostName();

// A TCP port that was free on this machine a moment ago (bound to port 0, then released).
Result<int> freeTcpPort();

// The absolute path of the running hvdrun (from /proc/self/exe), or "hvdrun".
std::string thisExecutable();

// The whole file; kNotFound / kSystem name the path and the reason.
Result<std::string> readTextFile(const std::string& path);

}  // namespace hvd::cli
