// runtime/api/preemption.h: the rank's side of hvdrun's preemption notice.
#pragma once

#include "runtime/common/env_registry.h"

namespace hvd::detail {

// Installs the flag-raising handler for HVD_PREEMPT_SIGNAL ("USR1" or "USR2") unless the
// program already handles or ignores that signal, and remembers HVD_PREEMPT_FILE and the
// rendezvous for preemptionRequested/Agreed. Called by init(); the handler is
// async-signal-safe; idempotent.
void installPreemptionHandler(const EnvSnapshot& env);

// HVD_PREEMPT_SIGNAL must be unset, empty, "USR1" or "USR2": anything else would silently
// leave the rank to die of the notice. kInvalidArgument naming the value otherwise.
Status checkPreemptionSettings(const EnvSnapshot& env);

}  // namespace hvd::detail
