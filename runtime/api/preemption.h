// runtime/api/preemption.h: the rank's side of hvdrun's preemption notice.
#pragma once

namespace hvd::detail {

// Installs the flag-raising handler for HVD_PREEMPT_SIGNAL ("USR1" or "USR2") unless the
// program already handles or ignores that signal. Called by init(); async-signal-safe
// handler, idempotent.
void installPreemptionHandler();

}  // namespace hvd::detail
