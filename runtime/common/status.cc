// runtime/common/status.cc: names and formatting for Status.
#include "runtime/common/status.h"

#include <cstring>
#include <cerrno>

namespace hvd {

std::string_view errcName(Errc code) {
  switch (code) {
    case Errc::kOk: return "ok";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kInvalidUsage: return "invalid usage";
    case Errc::kNotFound: return "not found";
    case Errc::kUnavailable: return "unavailable";
    case Errc::kSystem: return "system error";
    case Errc::kRemote: return "remote error";
    case Errc::kTimeout: return "timeout";
    case Errc::kInternal: return "internal error";
  }
  return "unknown error";
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return {code_, std::move(m), hint_};
}

Status systemError(std::string_view what, int error_number) {
  std::string m(what);
  m += ": ";
  m += std::strerror(error_number);
  return {Errc::kSystem, std::move(m)};
}

Status systemError(std::string_view what) { return systemError(what, errno); }

}  // namespace hvd
