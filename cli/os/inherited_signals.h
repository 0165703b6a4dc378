// cli/os/inherited_signals.h: the signals hvdrun ignores for itself, and gives back to every
// program it starts. An ignored disposition survives exec, so each fork that execs calls
// restoreIgnoredSignals() first: a rank, a discovery script or srun must get the defaults
// programs expect (a rank's `yes | head` ends by SIGPIPE, its writes past ulimit -f by
// SIGXFSZ).
#pragma once

#include <signal.h>

namespace hvd::cli {

// SIGPIPE: a reader that went away (`| head -1`, a closed terminal) must not decide hvdrun's
// exit code; writes fail with EPIPE instead. SIGXFSZ: a file size limit (ulimit -f) met by
// the console or a rank's output file killed hvdrun, and its ranks with it, without a word;
// writes fail with EFBIG instead, and the output is reported incomplete.
inline constexpr int kSignalsIgnoredByHvdrun[] = {SIGPIPE, SIGXFSZ};

inline void ignoreOwnSignals() {
  for (int sig : kSignalsIgnoredByHvdrun) ::signal(sig, SIG_IGN);
}

// Async-signal-safe: for the child between fork and exec.
inline void restoreIgnoredSignals() {
  for (int sig : kSignalsIgnoredByHvdrun) ::signal(sig, SIG_DFL);
}

}  // namespace hvd::cli
