// slurm/natural_compare.cc: Martin Pool's natural-order comparison, as Slurm ships it.
#include "slurm/natural_compare.h"

#include <cctype>

namespace hvd::slurm {
namespace {

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Characters past the end read as '\0', as in the C original.
char at(std::string_view s, size_t i) { return i < s.size() ? s[i] : '\0'; }

// Numbers without leading zeros: the longer run is larger; equal lengths compare by the
// first differing digit.
int compareRight(std::string_view a, size_t ai, std::string_view b, size_t bi) {
  int bias = 0;
  for (;; ++ai, ++bi) {
    char ca = at(a, ai), cb = at(b, bi);
    if (!isDigit(ca) && !isDigit(cb)) return bias;
    if (!isDigit(ca)) return -1;
    if (!isDigit(cb)) return +1;
    if (ca < cb) {
      if (bias == 0) bias = -1;
    } else if (ca > cb) {
      if (bias == 0) bias = +1;
    }
  }
}

// Runs with a leading zero compare like fractions: digit by digit from the left.
int compareLeft(std::string_view a, size_t ai, std::string_view b, size_t bi) {
  for (;; ++ai, ++bi) {
    char ca = at(a, ai), cb = at(b, bi);
    if (!isDigit(ca) && !isDigit(cb)) return 0;
    if (!isDigit(ca)) return -1;
    if (!isDigit(cb)) return +1;
    if (ca < cb) return -1;
    if (ca > cb) return +1;
  }
}

}  // namespace

int naturalCompare(std::string_view a, std::string_view b) {
  size_t ai = 0, bi = 0;
  while (true) {
    char ca = at(a, ai), cb = at(b, bi);
    while (isSpace(ca)) ca = at(a, ++ai);
    while (isSpace(cb)) cb = at(b, ++bi);
    if (isDigit(ca) && isDigit(cb)) {
      bool fractional = ca == '0' || cb == '0';
      int result = fractional ? compareLeft(a, ai, b, bi) : compareRight(a, ai, b, bi);
      if (result != 0) return result;
    }
    if (ca == '\0' && cb == '\0') return 0;
    if (ca < cb) return -1;
    if (ca > cb) return +1;
    ++ai;
    ++bi;
  }
}

}  // namespace hvd::slurm
