// slurm/hostlist.h: Slurm's hostlist expressions ("node[01-03,07],gpu-a[1-2]").
// expandHostlist gives the names in exactly Slurm's order (duplicates kept, never sorted);
// compressHostlist gives what `scontrol show hostlist` prints for those names, and
// compressHostlistSorted what `scontrol show hostlistsorted` prints. Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::slurm {

// Slurm's own limits (src/common/hostlist.c), enforced with a clear error instead of
// Slurm's silent truncation, plus a cap of ours that keeps a typo from exhausting memory.
inline constexpr uint64_t kMaxHostsPerRange = 64 * 1024;    // n[0-65535] at most
inline constexpr size_t kMaxRangesPerBracket = 64 * 1024;   // n[1,2,...] at most 65536 items
inline constexpr uint64_t kMaxPrefixesPerGroup = 64 * 1024;  // a[...]b[1]: a's group expands to <= 65536
inline constexpr size_t kMaxExpandedHosts = 16 * 1024 * 1024;

// Expands a hostlist expression. Separators are ',', ' ' and '\t' outside brackets. A
// name may hold several bracket groups: the last one varies fastest, then the others from
// left to right (Slurm's order: rack[1-2]-node[01-04] gives rack1-node01..04, rack2-...).
// Zero padding comes from the lower bound's text: n[09-10] -> n09 n10, n[8-10] -> n8..n10.
// Errors (kInvalidArgument) name the 1-based position and the offending text. Two inputs
// Slurm accepts are rejected on purpose, because Slurm's answer for them is corrupt: a '['
// that is never closed, and a number above 18446744073709551615 (Slurm wraps it).
// maxHosts lowers the cap on the number of names (fuzzing and previews use a small one).
Result<std::vector<std::string>> expandHostlist(std::string_view text, size_t maxHosts = kMaxExpandedHosts);

// True when a hostlist can spell this name: not empty, no '[', ']', ',', no whitespace or
// other control characters (Slurm has no escapes, and its natural-order comparison skips
// whitespace, which would merge different names), and no trailing number beyond 64 bits
// (Slurm would print a different name for it).
bool isSpellableName(std::string_view name);

// The shortest Slurm expression for these names, keeping their order and duplicates.
// compressHostlist(expand(x)) expands back to expand(x) exactly. A name that is not
// spellable gives kInvalidArgument naming it, rather than text that reads back wrong.
Result<std::string> compressHostlist(std::span<const std::string> names);

// The same, sorted and merged the way `scontrol show hostlistsorted` does (duplicates kept).
Result<std::string> compressHostlistSorted(std::span<const std::string> names);

}  // namespace hvd::slurm
