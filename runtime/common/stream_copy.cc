// runtime/common/stream_copy.cc: a vector copy loop with aligned stores.
#include "runtime/common/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hvd {

void streamCopy(std::byte* to, const std::byte* from, size_t n) {
#if defined(__SSE2__)
  if (n >= 64) {
    // One unaligned 16-byte store covers the head, then the destination is aligned.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
    size_t head = 16 - (reinterpret_cast<uintptr_t>(to) & 15);
    to += head, from += head, n -= head;
    for (; n >= 64; n -= 64, to += 64, from += 64) {
      auto* in = reinterpret_cast<const __m128i*>(from);
      auto* out = reinterpret_cast<__m128i*>(to);
      __m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1), c = _mm_loadu_si128(in + 2), d = _mm_loadu_si128(in + 3);
      _mm_store_si128(out, a), _mm_store_si128(out + 1, b), _mm_store_si128(out + 2, c), _mm_store_si128(out + 3, d);
    }
  }
#endif
  std::memcpy(to, from, n);
}

}  // namespace hvd
