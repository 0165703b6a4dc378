// runtime/common/hex.cc: a table lookup per nibble.
#include "runtime/common/hex.h"

#include <sys/random.h>

#include <cerrno>
#include <vector>

namespace hvd {

std::string toHex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) out += {kDigits[bytes[i] >> 4], kDigits[bytes[i] & 15]};
  return out;
}

Result<std::string> randomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return systemError("getrandom", errno);
    }
    got += static_cast<size_t>(n);
  }
  return toHex(raw.data(), raw.size());
}

}  // namespace hvd
