// cli/config/environment_settings.h: HVDRUN_<KEY> variables read into a SettingLayer
// (HVDRUN_NUM_PROC=4 is --num-proc 4). A variable naming no setting is an error, like an
// unknown key in a config file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/options/options.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// HVDRUN_PROFILE chooses a profile rather than setting an option, so it is skipped here.
constexpr const char* kProfileVariable = "HVDRUN_PROFILE";

// Flags take 1/0, true/false, yes/no, on/off; a list takes one element per line.
// Returns kInvalidArgument naming the variable for an unknown name or a bad flag value.
Result<SettingLayer> environmentLayer(const std::map<std::string, std::string, std::less<>>& environment,
                                      const std::vector<SettingKey>& keys);

// "num-proc" -> "HVDRUN_NUM_PROC".
std::string variableFor(const std::string& key);

}  // namespace hvd::cli
