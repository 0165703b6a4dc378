// cli/exit_code.h: hvdrun's documented exit codes (docs/exit-codes.md lists the same).
// Any other code is the first failing rank's own exit code, or 128+signal if it was killed.
#pragma once

#include "runtime/common/rank_contract.h"

namespace hvd::cli {

enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,     // a bug in hvdrun
  kUsage = 2,        // bad command line or config file
  kEnvironment = 3,  // the machine lacks what the request needs (program, library, Slurm)
  // A rank's runtime ended it: a collective waited past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
  // for ranks that never submitted it (the runtime ends it with this code).
  kStalled = rank_contract::kStalledExitCode,
  kTimeout = 124,    // a start or job timeout passed
  kInterrupted = 130,
};

}  // namespace hvd::cli
