// cli/plan/host_name.h: what may stand as a host in -H and hostfiles: a DNS name (labels of
// letters, digits, '-' and '_', at most 63 each, 253 in all, an optional final dot) or an
// IPv4 address, which has that form too. It becomes MASTER_ADDR, an ssh target and a word
// in messages, so anything else is refused with the character or length at fault.
#pragma once

#include <string_view>

#include "runtime/common/status.h"

namespace hvd::cli {

inline constexpr size_t kMaxHostNameLength = 253;
inline constexpr size_t kMaxHostLabelLength = 63;

// Ok, or kInvalidArgument saying what is wrong with `host` (without naming where it came
// from: the caller adds that).
Status checkHostName(std::string_view host);

}  // namespace hvd::cli
