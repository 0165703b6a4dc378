// runtime/common/store.h: the key/value store communicators are built with (addresses,
// readiness); never used inside a collective. hvdrun's rendezvous implements it for
// processes; tests use an in-memory one for threads.
#pragma once

#include <chrono>
#include <string>

#include "runtime/common/status.h"

namespace hvd {

class Store {
 public:
  virtual ~Store() = default;
  // Blocks briefly (a round trip). Thread-safety is the implementation's to document.
  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Blocks until the key exists or the timeout passes (kTimeout).
  virtual Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds delta to the decimal integer under key (0 when absent) atomically; the new value.
  // For "the first rank to see X says so" without a collective. A store that cannot
  // (PMIx's) answers kUnavailable, and callers do without.
  virtual Result<long long> add(const std::string& key, long long delta) {
    (void)key, (void)delta;
    return Status(Errc::kUnavailable, "this store has no atomic add");
  }
};

}  // namespace hvd
