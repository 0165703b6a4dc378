// cli/plan/tf_ports.h: where TF_CONFIG's ports start when the user did not say
// (--tf-port-base). On this machine alone hvdrun probes free ports (cli/os); across nodes
// it cannot, so it derives a base from the Slurm job id and a per-launch salt, spreading
// jobs that share a node over [20000, 60000) instead of all taking 8888, but outside the
// kernel's ephemeral range, where any outgoing connection may hold a port (a base there
// clashed with one in the test cluster). A clash left over is reported before any rank
// starts (hvdrun here, the task shim on other nodes).
#pragma once

#include <string_view>

namespace hvd::cli {

// Room for this many local ranks above each derived base.
inline constexpr int kTfPortsPerNode = 32;

// Inclusive, as /proc/sys/net/ipv4/ip_local_port_range has it.
struct PortRange {
  int first = 0;
  int last = -1;
};
// Linux's default ephemeral range.
inline constexpr PortRange kLinuxEphemeralPorts{32768, 60999};

// A base in [20000, 60000 - kTfPortsPerNode], a multiple of kTfPortsPerNode whose block lies
// outside `ephemeral` (anywhere in the span when that leaves no room), the same for the same
// job id and salt.
int derivedTfPortBase(std::string_view jobId, unsigned salt, PortRange ephemeral = kLinuxEphemeralPorts);

}  // namespace hvd::cli
