// slurm/hostlist_compress.cc: names to the bracketed text `scontrol show hostlist` and
// `show hostlistsorted` print. Names become ranges (prefix, numeric suffix, padding width)
// that merge as Slurm merges them; the printing then groups ranges sharing a prefix.
#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "slurm/hostlist.h"
#include "slurm/natural_compare.h"

namespace hvd::slurm {
namespace {

// prefix views the caller's name, which outlives every HostRange of one compression.
struct HostRange {
  std::string_view prefix;
  uint64_t lo = 0, hi = 0;
  int width = 0;
  bool single = false;  // no numeric suffix: prefix is the whole name

  uint64_t count() const { return single ? 1 : hi - lo + 1; }
  bool empty() const { return hi < lo || hi == std::numeric_limits<uint64_t>::max(); }
};

// Zeros needed to pad num to width.
int zeroPadding(uint64_t num, int width) {
  int digits = 1;
  while (num /= 10) ++digits;
  return width > digits ? width - digits : 0;
}

// Slurm's _width_equiv: two widths are equivalent when using either for both numbers
// changes neither number's padding; the one that differs is then adjusted.
bool widthEquivalent(uint64_t n, int& wn, uint64_t m, int& wm) {
  if (wn == wm) return true;
  int npad = zeroPadding(n, wn), nmpad = zeroPadding(n, wm);
  int mpad = zeroPadding(m, wm), mnpad = zeroPadding(m, wn);
  if (npad != nmpad && mpad != mnpad) return false;
  if (npad != nmpad) {
    wm = wn;
  } else {
    wn = wm;
  }
  return true;
}

bool widthsCombine(HostRange& a, HostRange& b) { return widthEquivalent(a.lo, a.width, b.lo, b.width); }

// 0 when the prefixes match and both or neither are single names. Equal bytes are the
// common case and need no natural-order walk.
int prefixCompare(const HostRange& a, const HostRange& b) {
  int c = a.prefix == b.prefix ? 0 : naturalCompare(a.prefix, b.prefix);
  return c == 0 ? static_cast<int>(b.single) - static_cast<int>(a.single) : c;
}

bool sameBracket(const HostRange& a, const HostRange& b) {
  return prefixCompare(a, b) == 0 && !a.single && !b.single;
}

HostRange rangeOf(std::string_view name) {
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  HostRange r;
  if (digits == name.size()) {
    r.prefix = name;
    r.single = true;
    return r;
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(name.data() + digits, name.data() + name.size(), value);
  if (ec != std::errc()) {  // beyond 64 bits: keep the name whole rather than corrupt it
    r.prefix = name;
    r.single = true;
    return r;
  }
  r.prefix = name.substr(0, digits);
  r.lo = r.hi = value;
  r.width = static_cast<int>(name.size() - digits);
  return r;
}

// hostlist_push_range: extends the last range when the name continues it.
void push(std::vector<HostRange>& ranges, HostRange r) {
  if (!ranges.empty()) {
    HostRange& tail = ranges.back();
    if (tail.hi == r.lo - 1 && prefixCompare(tail, r) == 0 && widthsCombine(tail, r)) {
      tail.hi = r.hi;
      return;
    }
  }
  ranges.push_back(std::move(r));
}

std::vector<HostRange> rangesOf(std::span<const std::string> names) {
  std::vector<HostRange> ranges;
  ranges.reserve(names.size() / 8 + 1);
  for (const std::string& name : names) push(ranges, rangeOf(name));
  return ranges;
}

void appendNumber(std::string& out, uint64_t value, int width) {
  char digits[24];
  size_t length = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, value).ptr - digits);
  if (static_cast<size_t>(width) > length) out.append(static_cast<size_t>(width) - length, '0');
  out.append(digits, length);
}

// hostlist_ranged_string: consecutive ranges with the same prefix share one bracket.
std::string render(const std::vector<HostRange>& ranges) {
  std::string out;
  size_t i = 0;
  while (i < ranges.size()) {
    if (!out.empty()) out += ',';
    bool bracket = ranges[i].count() > 1 || (i + 1 < ranges.size() && sameBracket(ranges[i], ranges[i + 1]));
    out += ranges[i].prefix;
    if (ranges[i].single) {
      ++i;
      continue;
    }
    if (bracket) out += '[';
    size_t first = i;
    do {
      if (i > first) out += ',';
      appendNumber(out, ranges[i].lo, ranges[i].width);
      if (ranges[i].lo < ranges[i].hi) {
        out += '-';
        appendNumber(out, ranges[i].hi, ranges[i].width);
      }
      ++i;
    } while (i < ranges.size() && sameBracket(ranges[i], ranges[i - 1]));
    if (bracket) out += ']';
  }
  return out;
}

// hostrange_cmp: by prefix, then by lowest number when the widths combine, else by width.
// Slurm subtracts the two numbers into an int, which misorders numbers 2^31 apart and then
// merges them into a bogus range (it loses a host on "666666,66966666106669042"); we
// compare the numbers themselves.
int rangeCompare(const HostRange& a, const HostRange& b) {
  int c = prefixCompare(a, b);
  if (c != 0) return c;
  int wa = a.width, wb = b.width;
  if (widthEquivalent(a.lo, wa, b.lo, wb)) return a.lo < b.lo ? -1 : (a.lo > b.lo ? 1 : 0);
  return a.width - b.width;
}

// hostlist_coalesce: where sorted neighbours overlap, the overlap is split into single
// hosts so that each duplicate stands alone. Slurm rescans from the end after every split
// and inserts one range at a time (cubic on "n[1-20000],n[1-20000]"); a split changes only
// the pair and its right neighbour, so we resume there and insert the singles at once.
void coalesce(std::vector<HostRange>& ranges) {
  size_t i = ranges.size() - 1;
  while (i > 0) {
    HostRange& prev = ranges[i - 1];
    HostRange& next = ranges[i];
    if (prev.single || next.single || !(prev.hi > next.lo) || prefixCompare(prev, next) != 0 ||
        !widthsCombine(prev, next)) {
      --i;
      continue;
    }
    HostRange overlap = prev;
    overlap.lo = next.lo;
    overlap.hi = std::min(next.hi, prev.hi);
    if (overlap.hi < prev.hi) next.hi = prev.hi;
    prev.hi = overlap.lo;
    next.lo = overlap.hi;
    std::vector<HostRange> singles;
    for (uint64_t v = overlap.lo; v <= overlap.hi; ++v) {
      HostRange one = overlap;
      one.lo = one.hi = v;
      if (v > prev.hi) singles.push_back(one);
      if (v < next.lo) singles.push_back(one);
      if (v == std::numeric_limits<uint64_t>::max()) break;
    }
    ranges.insert(ranges.begin() + static_cast<long>(i), singles.begin(), singles.end());
    // `next` now sits at i + singles.size(); recheck it against its right neighbour, and
    // from there leftwards as Slurm's rescan would.
    i = std::min(i + singles.size() + 1, ranges.size() - 1);
  }
}

// hostlist_collapse: right to left, a range that the next one continues absorbs it.
void collapse(std::vector<HostRange>& ranges) {
  std::vector<HostRange> kept;  // in reverse order
  kept.reserve(ranges.size());
  kept.push_back(std::move(ranges.back()));
  for (size_t i = ranges.size() - 1; i-- > 0;) {
    HostRange& prev = ranges[i];
    HostRange& next = kept.back();
    if (prev.hi == next.lo - 1 && prefixCompare(prev, next) == 0 && widthsCombine(prev, next)) {
      prev.hi = next.hi;
      next = std::move(prev);
    } else {
      kept.push_back(std::move(prev));
    }
  }
  ranges.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
}

const char* unspellableReason(std::string_view name, char& culprit) {
  if (name.empty()) return "is empty";
  for (char c : name) {
    culprit = c;
    if (c == '[' || c == ']' || c == ',') return "contains";
    if (static_cast<unsigned char>(c) < 0x20 || c == ' ' || c == 0x7f) return "contains the character";
  }
  // Slurm reads trailing digits as one number: beyond 64 bits it would print another name.
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  uint64_t value = 0;
  if (digits < name.size() &&
      std::from_chars(name.data() + digits, name.data() + name.size(), value).ec == std::errc::result_out_of_range) {
    return "ends in a number larger than 18446744073709551615";
  }
  return nullptr;
}

Status checkRepresentable(std::span<const std::string> names) {
  for (size_t i = 0; i < names.size(); ++i) {
    char culprit = 0;
    const char* reason = unspellableReason(names[i], culprit);
    if (reason == nullptr) continue;
    std::string what = reason;
    if (what.rfind("contains", 0) == 0) {
      what += static_cast<unsigned char>(culprit) > 0x20 && culprit != 0x7f
                  ? " '" + std::string(1, culprit) + "'"
                  : fmt::format(" 0x{:02x}", static_cast<unsigned char>(culprit));
    }
    return invalidArgument("name " + std::to_string(i + 1) + " ('" + names[i] + "') " + what +
                           ", which a Slurm hostlist cannot represent");
  }
  return Status::ok();
}

}  // namespace

bool isSpellableName(std::string_view name) {
  char culprit = 0;
  return unspellableReason(name, culprit) == nullptr;
}

Result<std::string> compressHostlist(std::span<const std::string> names) {
  HVD_RETURN_IF_ERROR(checkRepresentable(names));
  return render(rangesOf(names));
}

Result<std::string> compressHostlistSorted(std::span<const std::string> names) {
  HVD_RETURN_IF_ERROR(checkRepresentable(names));
  std::vector<HostRange> ranges = rangesOf(names);
  if (ranges.size() > 1) {
    std::stable_sort(ranges.begin(), ranges.end(),
                     [](const HostRange& a, const HostRange& b) { return rangeCompare(a, b) < 0; });
    coalesce(ranges);
    collapse(ranges);
  }
  return render(ranges);
}

}  // namespace hvd::slurm
