// cli/config/config_file.h: a TOML config file read into a SettingLayer. Every key must be
// one of hvdrun's settings (docs/config.md); anything else is an error that names the
// file, line and column, so a misspelt key never silently does nothing.
#pragma once

#include <string>
#include <vector>

#include "cli/options/options.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// Parses `text` (read from `path`, used only in messages). Values of the table
// [profile.<profile>] replace the top-level ones; an empty profile means the file's
// `default-profile` key, or none. Returns kInvalidArgument as "path:line:col: what" for a
// syntax error, an unknown key, a wrong type or an unknown profile.
Result<SettingLayer> configFileLayer(const std::string& path, const std::string& text, const std::string& profile,
                                     const std::vector<SettingKey>& keys);

// $XDG_CONFIG_HOME/hvdrun/config.toml, else $HOME/.config/hvdrun/config.toml; empty when
// neither variable is set.
std::string defaultConfigPath(const char* xdgConfigHome, const char* home);

}  // namespace hvd::cli
