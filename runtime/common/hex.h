// runtime/common/hex.h: bytes as lowercase hex text, and random bytes from the kernel as
// hex (secrets and unique names).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/common/status.h"

namespace hvd {

// Two lowercase hex digits per byte.
std::string toHex(const void* data, size_t size);

// `bytes` random bytes from getrandom(2) as lowercase hex (2 * bytes digits). Retries
// interrupted and short reads; kSystem when the kernel refuses.
Result<std::string> randomHex(size_t bytes);

}  // namespace hvd
