// cli/user_error.cc: mapping library errors to exit codes.
#include "cli/user_error.h"

namespace hvd::cli {

ExitCode exitCodeFor(Errc code) {
  switch (code) {
    case Errc::kOk: return ExitCode::kOk;
    case Errc::kInvalidArgument:
    case Errc::kInvalidUsage: return ExitCode::kUsage;
    case Errc::kNotFound:
    case Errc::kUnavailable:
    case Errc::kSystem:
    case Errc::kRemote: return ExitCode::kEnvironment;
    case Errc::kTimeout: return ExitCode::kTimeout;
    case Errc::kInternal: return ExitCode::kInternal;
  }
  return ExitCode::kInternal;
}

void throwIfError(const Status& status, std::string hint) {
  if (status.isOk()) return;
  throw UserError(exitCodeFor(status.code()), status.message(), status.hint().empty() ? std::move(hint) : status.hint());
}

}  // namespace hvd::cli
