// cli/options/option_values.h: the checks and conversions of options' text values, each
// refusing a bad value with UserError (exit 2) naming the option and what it expects.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "cli/options/options.h"

namespace hvd::cli {

inline constexpr const char* kUsageHint = "run 'hvdrun --help' for the options";

// A whole number from minimum to maximum.
int parseIntIn(const std::string& option, const std::string& text, int minimum, int maximum);
// A whole number from 1; past int's range it reads as the nearest end of it.
int parsePositiveInt(const std::string& option, const std::string& text);
// "0,2-4": ranks.
std::set<int> parseRankList(const std::string& option, const std::string& text);
// -x NAME=VALUE or -x NAME (hvdrun's own value; skipped when unset, as mpirun skips it), as
// "NAME=value"; `taken`: the variables the options already give the ranks.
std::vector<std::string> exportedVariables(const std::vector<std::string>& items, const std::vector<std::string>& taken);
// --stdin: a rank, or none.
void parseStdinTarget(const std::string& text, Options& o);
// Seconds, possibly fractional.
std::chrono::milliseconds parseSeconds(const std::string& option, const std::string& text);
// --signal USR2@90.
void parsePreemptSignal(const std::string& text, Options& o);

}  // namespace hvd::cli
