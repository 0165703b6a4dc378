// runtime/api/preemption.h: the rank's side of hvdrun's preemption notice.
#pragma once

#include "runtime/common/env_registry.h"

namespace hvd::detail {

// Installs the flag-raising handler for HVD_PREEMPT_SIGNAL ("USR1" or "USR2") unless the
// program already handles or ignores that signal, and remembers HVD_PREEMPT_FILE and the
// rendezvous for preemptionRequested/Agreed. Called by init(); the handler is
// async-signal-safe; idempotent.
void installPreemptionHandler(const EnvSnapshot& env);

}  // namespace hvd::detail
