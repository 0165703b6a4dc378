// cli/elastic/host_discovery.h: Horovod's --host-discovery-script. The script prints the
// hosts an elastic job may use now, one a line: "host:slots", or "host" (then
// --slots-per-host slots). hvdrun runs it once before the job starts, where its failure is
// the user's error, and then every second on a thread of its own while the job runs.
//
// The script is not hvdrun's child: hvdrun's supervisor reaps every child it has (it is a
// subreaper, and waits for any), which would steal the script's exit status. A short-lived
// child of hvdrun's runs the script, waits for it and sends its status and output back
// through a pipe; only async-signal-safe calls run in it (hvdrun has threads).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::cli {

struct DiscoveredHost {
  std::string host;
  int slots = 0;
  bool operator==(const DiscoveredHost&) const = default;
};

// The script's output; kInvalidArgument names the line that is neither "host" nor
// "host:slots" (slots 1-4096), or a host named twice. Blank lines are skipped.
Result<std::vector<DiscoveredHost>> parseDiscoveredHosts(std::string_view output, int defaultSlots);

// Runs `script` (no arguments, hvdrun's environment) and parses what it printed, within
// `timeout`. kSystem when it cannot start, kRemote when it exits with an error (its stderr
// in the message), kTimeout when it runs too long (it is killed).
Result<std::vector<DiscoveredHost>> discoverHosts(const std::string& script, int defaultSlots,
                                                  std::chrono::milliseconds timeout);

class HostDiscovery {
 public:
  // Discovers once now (an error is returned: the job does not start), then every `every`.
  static Result<std::unique_ptr<HostDiscovery>> start(std::string script, int defaultSlots,
                                                      std::chrono::milliseconds every);
  ~HostDiscovery();  // stops the thread
  HostDiscovery(const HostDiscovery&) = delete;
  HostDiscovery& operator=(const HostDiscovery&) = delete;

  // The last answer the script gave; a later failure keeps it (and is said once on stderr).
  std::vector<DiscoveredHost> latest() const;

 private:
  HostDiscovery(std::string script, int defaultSlots, std::chrono::milliseconds every,
                std::vector<DiscoveredHost> first);
  void loop();

  std::string script_;
  int defaultSlots_;
  std::chrono::milliseconds every_;
  mutable std::mutex mutex_;
  std::vector<DiscoveredHost> latest_;
  std::string lastProblem_;  // the thread's own
  std::atomic<bool> stopping_{false};
  int wakeFd_ = -1;  // an eventfd the destructor writes to end the wait
  std::thread thread_;
};

}  // namespace hvd::cli
