// slurm/hostlist_expand.cc: hostlist text to names, following Slurm's hostlist.c rule by
// rule (tokenizer, range syntax, the order of several bracket groups) so that our names
// equal `scontrol show hostnames` on every input Slurm accepts; tests check this against
// the real scontrol over thousands of generated expressions.
#include <charconv>
#include <string>

#include "slurm/hostlist.h"

namespace hvd::slurm {
namespace {

bool isSeparator(char c) { return c == ',' || c == ' ' || c == '\t'; }
// C's isspace in the "C" locale, which strtoul skips.
bool isCSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

struct Range {
  uint64_t lo = 0, hi = 0;
  int width = 0;  // zero padding: the length of the lower bound's text
};

// One token of the input, with where it starts, for messages.
struct Token {
  std::string_view text;
  size_t offset = 0;
};

class Expander {
 public:
  Expander(std::string_view input, size_t maxHosts) : input_(input), maxHosts_(maxHosts) {}

  Result<std::vector<std::string>> run() {
    for (const Token& token : tokenize()) {
      Status s = expandToken(token);
      if (!s.isOk()) return s;
    }
    return std::move(names_);
  }

 private:
  Status fail(size_t position, const std::string& what) const {
    return invalidArgument("invalid hostlist '" + std::string(input_) + "' at position " +
                           std::to_string(position + 1) + ": " + what);
  }

  // Slurm's tokenizer: a token runs to the next separator, except that a bracket pair
  // that starts inside it is skipped whole, separators and all.
  std::vector<Token> tokenize() const {
    std::vector<Token> tokens;
    size_t pos = 0;
    const size_t n = input_.size();
    while (true) {
      while (pos < n && isSeparator(input_[pos])) ++pos;
      if (pos >= n) break;
      size_t start = pos, parse = pos;
      while (true) {
        while (pos < n && !isSeparator(input_[pos])) ++pos;
        bool extended = false;
        while (true) {
          size_t open = input_.find('[', parse);
          if (open == std::string_view::npos || open > pos) break;
          size_t close = input_.find(']', parse);
          if (close == std::string_view::npos || close < open) break;
          if (close < pos) {
            parse = close + 1;
            continue;
          }
          pos = close;
          extended = true;
          break;
        }
        if (!extended) break;
      }
      tokens.push_back({input_.substr(start, pos - start), start});
    }
    return tokens;
  }

  Status expandToken(const Token& token) {
    std::string_view tok = token.text;
    size_t open = tok.rfind('[');
    if (open == std::string_view::npos) return pushName(token);
    size_t close = tok.find(']', open + 1);
    if (close == std::string_view::npos) {
      return fail(token.offset + open, "'[' is never closed in '" + std::string(tok) + "'");
    }
    if (close + 1 != tok.size()) {
      return fail(token.offset + close + 1, "'" + std::string(tok.substr(close + 1)) + "' follows the last ']' in '" +
                                                std::string(tok) +
                                                "' (text may stand between bracket groups, not after the last one)");
    }
    std::vector<Range> ranges;
    HVD_RETURN_IF_ERROR(parseRangeList(tok.substr(open + 1, close - open - 1), token.offset + open + 1, ranges));
    uint64_t perPrefix = 0;
    for (const Range& r : ranges) perPrefix += r.hi - r.lo + 1;
    // How many prefixes fit under the cap, so a typo fails before it fills memory.
    size_t budget = (maxHosts_ - names_.size()) / perPrefix;
    std::vector<std::string> prefixes;
    HVD_RETURN_IF_ERROR(expandPrefix(std::string(tok.substr(0, open)), token.offset, budget, prefixes));
    if (prefixes.size() > budget) return tooMany(token.offset);
    names_.reserve(names_.size() + prefixes.size() * perPrefix);
    for (const std::string& prefix : prefixes) {
      for (const Range& r : ranges) {
        for (uint64_t v = r.lo;; ++v) {
          appendName(prefix, v, r.width);
          if (v == r.hi) break;
        }
      }
    }
    return Status::ok();
  }

  Status tooMany(size_t offset) const {
    return fail(offset, "expands to more than " + std::to_string(maxHosts_) + " names");
  }

  // A name without brackets stands for itself. Slurm reads its trailing digits as a
  // number and prints that back, which would corrupt a suffix beyond 64 bits: refuse it.
  Status pushName(const Token& token) {
    std::string_view tok = token.text;
    size_t digits = tok.size();
    while (digits > 0 && isDigit(tok[digits - 1])) --digits;
    if (digits < tok.size()) {
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(tok.data() + digits, tok.data() + tok.size(), value);
      if (ec == std::errc::result_out_of_range) {
        return fail(token.offset + digits, "the number '" + std::string(tok.substr(digits)) + "' in '" +
                                               std::string(tok) + "' is larger than 18446744073709551615");
      }
    }
    if (names_.size() + 1 > maxHosts_) return tooMany(token.offset);
    names_.emplace_back(tok);
    return Status::ok();
  }

  // The bracket groups before the last one. The rightmost of them varies slowest; each
  // of its values is substituted and the rest of the prefix expanded again (Slurm's order).
  Status expandPrefix(const std::string& prefix, size_t offset, size_t budget, std::vector<std::string>& out) {
    size_t open = prefix.rfind('[');
    size_t close = open == std::string::npos ? std::string::npos : prefix.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close < open) {
      out.push_back(prefix);
      return Status::ok();
    }
    std::string left = prefix.substr(0, open);
    std::string right = prefix.substr(close + 1);
    std::vector<Range> ranges;
    // Positions inside an already substituted prefix no longer match the input; name the
    // token's start then.
    HVD_RETURN_IF_ERROR(parseRangeList(std::string_view(prefix).substr(open + 1, close - open - 1),
                                       offset + open + 1, ranges));
    bool recurse = left.find('[') != std::string::npos;
    uint64_t count = 0;
    for (const Range& r : ranges) {
      count += r.hi - r.lo + 1;
      if (count > kMaxPrefixesPerGroup) {
        return fail(offset + open, "the bracket group '[" + prefix.substr(open + 1, close - open - 1) +
                                       "]' before the last one expands to more than " +
                                       std::to_string(kMaxPrefixesPerGroup) + " values (Slurm's limit)");
      }
      for (uint64_t v = r.lo;; ++v) {
        std::string substituted = left + padded(v, r.width) + right;
        if (recurse) {
          HVD_RETURN_IF_ERROR(expandPrefix(substituted, offset, budget, out));
        } else {
          out.push_back(std::move(substituted));
        }
        if (out.size() > budget) return tooMany(offset);
        if (v == r.hi) break;
      }
    }
    return Status::ok();
  }

  Status parseRangeList(std::string_view list, size_t offset, std::vector<Range>& out) {
    size_t start = 0;
    while (true) {
      if (out.size() == kMaxRangesPerBracket) {
        return fail(offset + start, "more than " + std::to_string(kMaxRangesPerBracket) +
                                        " ranges in one bracket group (Slurm's limit)");
      }
      size_t comma = list.find(',', start);
      std::string_view item = list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      Range r;
      HVD_RETURN_IF_ERROR(parseRange(item, offset + start, r));
      out.push_back(r);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return Status::ok();
  }

  // strtoul as Slurm calls it: leading C whitespace, an optional sign, decimal digits.
  // Returns how many characters were consumed (0: no number, or a negative one), or -1
  // past 64 bits.
  static long parseNumber(std::string_view text, uint64_t& value) {
    size_t i = 0;
    while (i < text.size() && isCSpace(text[i])) ++i;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    size_t digitsStart = i;
    while (i < text.size() && isDigit(text[i])) ++i;
    if (i == digitsStart) return 0;
    auto [end, ec] = std::from_chars(text.data() + digitsStart, text.data() + i, value);
    if (ec == std::errc::result_out_of_range) return -1;
    if (negative && value != 0) return 0;
    return static_cast<long>(i);
  }

  // "lo" or "lo-hi", Slurm's rules: the width is the length of lo's text; with a '-' and a
  // non-empty hi, lo may carry trailing characters that strtoul stops at ("1 -3" is 01..03).
  Status parseRange(std::string_view item, size_t offset, Range& r) {
    std::string quoted = "'" + std::string(item) + "'";
    if (item.empty()) return fail(offset, "an empty range (two commas, or '[]')");
    if (item.find(':') != std::string_view::npos) {
      return fail(offset, quoted + " is not a number or range (IPv6 addresses are not taken here: give the host's name)");
    }
    if (item.find('x') != std::string_view::npos) {
      return fail(offset + item.find('x'), quoted + " is not a number or range (multi-dimensional boxes are not supported)");
    }
    size_t dash = item.find('-');
    std::string_view loText = item.substr(0, dash);
    std::string_view hiText = dash == std::string_view::npos ? std::string_view() : item.substr(dash + 1);
    if (!hiText.empty() && hiText[0] == '-') return fail(offset + dash + 1, quoted + ": negative numbers are not allowed");
    r.width = static_cast<int>(loText.size());
    long used = parseNumber(loText, r.lo);
    if (used < 0) return fail(offset, quoted + ": the number is larger than 18446744073709551615");
    if (used == 0) return fail(offset, quoted + " is not a number or range");
    if (!hiText.empty()) {
      long hiUsed = parseNumber(hiText, r.hi);
      if (hiUsed < 0) return fail(offset + dash + 1, quoted + ": the number is larger than 18446744073709551615");
      if (hiUsed == 0 || static_cast<size_t>(hiUsed) != hiText.size()) {
        return fail(offset + dash + 1, quoted + " is not a number or range");
      }
    } else {
      if (static_cast<size_t>(used) != loText.size()) {
        return fail(offset + static_cast<size_t>(used), quoted + " is not a number or range");
      }
      r.hi = r.lo;
    }
    if (r.lo > r.hi) return fail(offset, quoted + " runs downwards; write the smaller number first");
    if (r.hi - r.lo >= kMaxHostsPerRange) {
      return fail(offset, quoted + " has " + std::to_string(r.hi - r.lo + 1) + " hosts; Slurm allows at most " +
                              std::to_string(kMaxHostsPerRange) + " in one range");
    }
    return Status::ok();
  }

  // Builds prefix + zero-padded value in place: no temporaries on the hot path.
  void appendName(const std::string& prefix, uint64_t value, int width) {
    char digits[24];
    size_t length = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, value).ptr - digits);
    size_t zeros = static_cast<size_t>(width) > length ? static_cast<size_t>(width) - length : 0;
    std::string& name = names_.emplace_back();
    name.reserve(prefix.size() + zeros + length);
    name.append(prefix).append(zeros, '0').append(digits, length);
  }

  static std::string padded(uint64_t value, int width) {
    std::string digits = std::to_string(value);
    if (static_cast<int>(digits.size()) >= width) return digits;
    return std::string(static_cast<size_t>(width) - digits.size(), '0') + digits;
  }

  std::string_view input_;
  size_t maxHosts_;
  std::vector<std::string> names_;
};

}  // namespace

Result<std::vector<std::string>> expandHostlist(std::string_view text, size_t maxHosts) {
  return Expander(text, maxHosts).run();
}

}  // namespace hvd::slurm
