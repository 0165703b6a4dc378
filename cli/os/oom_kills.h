// cli/os/oom_kills.h: how many processes the kernel's OOM killer has ended on this machine
// since boot (/proc/vmstat's oom_kill, counting cgroup-limit kills too). hvdrun reads it
// before and after a local job: a rank killed by a SIGKILL hvdrun never sent, while the
// count rose, most likely ran out of memory, and the summary says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hvd::cli {

// The oom_kill value of /proc/vmstat's text; nullopt where the kernel has none (before 4.13).
std::optional<std::uint64_t> oomKillsIn(std::string_view vmstat);

// This machine's count now; nullopt when /proc/vmstat cannot be read or lacks it.
std::optional<std::uint64_t> kernelOomKills();

}  // namespace hvd::cli
