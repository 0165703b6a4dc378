// hvd/status.h: the error model every library of hvdrun returns, and the public API too.
// A Status is Ok or carries an Errc plus a message naming what the user can act on (rank,
// peer, host, offending token). Libraries return Status/Result and never throw across
// their boundaries; only the CLI's main turns them into text and exit codes.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hvd {

// A small taxonomy in the spirit of NCCL's: enough to pick an exit code and a reaction.
enum class Errc {
  kOk = 0,
  kInvalidArgument,  // malformed input: a hostlist, a number, a file's contents
  kInvalidUsage,     // well-formed input that asks for something impossible
  kNotFound,         // a file, program, library or variable that is not there
  kUnavailable,      // present but not usable now (no GPU visible, no Slurm config)
  kSystem,           // an OS call failed (errno-style)
  kRemote,           // a peer failed or closed its connection
  kTimeout,          // a deadline passed
  kInternal,         // a bug in hvdrun
};

std::string_view errcName(Errc code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message, std::string hint = "")
      : code_(code), message_(std::move(message)), hint_(std::move(hint)) {}

  static Status ok() { return {}; }
  bool isOk() const { return code_ == Errc::kOk; }
  explicit operator bool() const { return isOk(); }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }
  // What the user can do about it, when the library knows; the CLI prints it as "hint:".
  const std::string& hint() const { return hint_; }
  Status withHint(std::string hint) const { return {code_, message_, std::move(hint)}; }

  // "context: message", so callers can say where an error happened without losing why.
  Status withContext(std::string_view context) const;

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
  std::string hint_;
};

// Shorthands that read well at the point of failure: `return invalidArgument("...")`.
inline Status invalidArgument(std::string m) { return {Errc::kInvalidArgument, std::move(m)}; }
inline Status invalidUsage(std::string m) { return {Errc::kInvalidUsage, std::move(m)}; }
inline Status notFound(std::string m) { return {Errc::kNotFound, std::move(m)}; }
inline Status unavailable(std::string m) { return {Errc::kUnavailable, std::move(m)}; }
inline Status internalError(std::string m) { return {Errc::kInternal, std::move(m)}; }
// The current errno, described: "what: strerror(errno)".
Status systemError(std::string_view what);
Status systemError(std::string_view what, int error_number);

// Result<T> holds a T or a non-Ok Status. Check isOk() (or the bool) before value(), *
// or ->: on a failure they throw std::bad_variant_access, which carries none of the
// Status's message; status() says what failed.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Status status() const { return isOk() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

inline const Status& toStatus(const Status& s) { return s; }
template <typename T>
Status toStatus(const Result<T>& r) { return r.status(); }

}  // namespace hvd

// Returns early with the Status of a failed Status or Result expression.
#define HVD_RETURN_IF_ERROR(expr)                                  \
  do {                                                             \
    if (auto&& hvd_result_ = (expr); !hvd_result_.isOk())          \
      return ::hvd::toStatus(hvd_result_);                         \
  } while (0)
