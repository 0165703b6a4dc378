// cli/os/machine.h: small facts about this machine that planning needs.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "runtime/common/status.h"

namespace hvd::cli {

// gethostname(), or "localhost" when it fails.
std::string hostName();

// A TCP port that was free on this machine a moment ago (bound to port 0, then released).
Result<int> freeTcpPort();

// Whether a listener could bind this TCP port on every address now. SO_REUSEADDR, as
// servers set it, so a port a finished job left in TIME_WAIT counts as free.
bool tcpPortFree(int port);

// The kernel's ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range: first, last,
// inclusive), where outgoing connections take their local ports; nullopt when unreadable.
std::optional<std::pair<int, int>> ephemeralPortRange();

// The first of `count` consecutive ports free now, starting at a random free port;
// kUnavailable when 50 tries find no such block.
Result<int> freeTcpPortBlock(int count);

// The cores this process can have (its affinity: what taskset, cgroup cpusets and Slurm's
// binding leave it, capped by a cgroup CPU quota such as docker --cpus; cpu_budget.h), and
// the CPUs online on the machine; at least 1 each.
int usableCpuCount();
int onlineCpuCount();

// This machine's IPv4 address on the route to `host` (a name or an address), as the kernel
// would choose it to send there; nothing is sent. kNotFound when the name does not resolve,
// kUnavailable when no route leads there.
Result<std::string> localAddressTowards(const std::string& host);

// The absolute path of the running hvdrun (from /proc/self/exe), or "hvdrun".
std::string thisExecutable();

// The whole file; kNotFound / kSystem name the path and the reason. Refuses (kInvalidArgument)
// what is not a regular file (a directory, /dev/zero, a FIFO: never a hang or an
// exhausted memory) and files over kMaxTextFileBytes.
inline constexpr size_t kMaxTextFileBytes = size_t{16} << 20;
Result<std::string> readTextFile(const std::string& path);

}  // namespace hvd::cli
