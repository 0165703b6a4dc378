// cli/user_error.h: the one exception the CLI throws; main() turns it into
// "hvdrun: error: <what>", an optional "  hint: <what to do>", and its exit code.
#pragma once

#include <stdexcept>
#include <string>

#include "cli/exit_code.h"
#include "runtime/common/status.h"

namespace hvd::cli {

class UserError : public std::runtime_error {
 public:
  UserError(ExitCode code, const std::string& what, std::string hint = "")
      : std::runtime_error(what), code_(code), hint_(std::move(hint)) {}
  ExitCode code() const { return code_; }
  const std::string& hint() const { return hint_; }

 private:
  ExitCode code_;
  std::string hint_;
};

// The exit code a library Status maps to when it reaches the user.
ExitCode exitCodeFor(Errc code);

// Throws a UserError for a non-Ok status; returns otherwise.
void throwIfError(const Status& status, std::string hint = "");

template <typename T>
T valueOrThrow(Result<T> result, std::string hint = "") {
  throwIfError(result.status(), std::move(hint));
  return std::move(result).value();
}

}  // namespace hvd::cli
