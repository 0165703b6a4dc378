// runtime/common/dynamic_library.h: a library opened with dlopen, closed on destruction.
// Backends whose libraries may be missing on a machine (CUDA, NCCL, the GPU driver) are
// reached through this, so hvdrun starts everywhere and reports what is there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd {

class DynamicLibrary {
 public:
  // Opens the first candidate that loads (sonames first, absolute paths as fallbacks).
  // Does not block beyond the loader itself. On failure the Status names every candidate
  // with dlerror()'s reason.
  static Result<DynamicLibrary> open(const std::vector<std::string>& candidates);

  // The symbol's address, or nullptr when the library lacks it (e.g. an older version).
  void* symbol(const char* name) const;

  template <typename Fn>
  Fn function(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

  // The path the loader actually resolved, for --verbose reports.
  const std::string& path() const { return path_; }

 private:
  struct Closer {
    void operator()(void* handle) const;
  };
  std::unique_ptr<void, Closer> handle_;
  std::string path_;
};

}  // namespace hvd
