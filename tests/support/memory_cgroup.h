// tests/support/memory_cgroup.h: a memory cgroup a test's rank moves itself into, so the
// kernel's OOM killer really ends it (tests of what hvdrun says of such an end).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace hvd::test {

// A cgroup of `bytes` of memory without swap, made for one test (cgroup v1's memory
// controller, or v2's memory.max); "" where this machine lets the test make none (not root,
// no memory controller). A process joins it by writing its pid to <cgroup>/cgroup.procs.
inline std::string makeMemoryCgroup(size_t bytes) {
  auto write = [](const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value;
    out.flush();
    return static_cast<bool>(out);
  };
  const std::string name = "hvd-oom-test-" + std::to_string(::getpid());
  const std::string v1 = "/sys/fs/cgroup/memory/" + name;
  if (::mkdir(v1.c_str(), 0755) == 0) {
    bool ok = write(v1 + "/memory.limit_in_bytes", std::to_string(bytes));
    if (ok && std::filesystem::exists(v1 + "/memory.memsw.limit_in_bytes")) {
      ok = write(v1 + "/memory.memsw.limit_in_bytes", std::to_string(bytes));
    }
    if (ok) return v1;
    ::rmdir(v1.c_str());
  }
  for (const std::string root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    const std::string v2 = root + "/" + name;
    if (!std::filesystem::exists(root + "/cgroup.controllers") || ::mkdir(v2.c_str(), 0755) != 0) continue;
    if (write(v2 + "/memory.max", std::to_string(bytes)) &&
        (!std::filesystem::exists(v2 + "/memory.swap.max") || write(v2 + "/memory.swap.max", "0"))) {
      return v2;
    }
    ::rmdir(v2.c_str());
  }
  return "";
}

// Removes the cgroup once the processes in it are gone (up to 5 s: a killed one leaves late).
inline void removeCgroup(const std::string& cgroup) {
  for (int i = 0; i < 50 && ::rmdir(cgroup.c_str()) != 0 && errno == EBUSY; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace hvd::test
