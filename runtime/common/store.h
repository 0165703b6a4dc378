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
};

}  // namespace hvd
