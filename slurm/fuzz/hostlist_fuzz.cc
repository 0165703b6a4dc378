// slurm/fuzz/hostlist_fuzz.cc: libFuzzer target for the hostlist parser. Beyond "no crash,
// no leak, no UB" it checks the round trip: whatever expands, compresses (plain and
// sorted) into text that expands back to the same names (the same multiset when sorted).
#include <algorithm>
#include <string>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "slurm/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // A small cap keeps each run fast; the cap's own error path is exercised too.
  constexpr size_t kCap = 20000;
  auto names = hvd::slurm::expandHostlist(text, kCap);
  if (!names) return 0;
  auto compressed = hvd::slurm::compressHostlist(*names);
  auto sortedText = hvd::slurm::compressHostlistSorted(*names);
  // Names with brackets, separators or control characters have no hostlist spelling:
  // both compressions must refuse exactly those.
  bool representable = std::all_of(names->begin(), names->end(), hvd::slurm::isSpellableName);
  if (compressed.isOk() != representable || sortedText.isOk() != representable) std::abort();
  if (!representable) return 0;
  auto back = hvd::slurm::expandHostlist(*compressed, kCap);
  if (!back || *back != *names) std::abort();
  auto sortedBack = hvd::slurm::expandHostlist(*sortedText, kCap);
  if (!sortedBack) std::abort();
  auto a = *names, b = *sortedBack;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) std::abort();
  return 0;
}
