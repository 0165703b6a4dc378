// cli/config/settings_sources.cc: finds the config file and profile, builds the layers.
#include "cli/config/settings_sources.h"

#include <cstdlib>
#include <filesystem>

#include "cli/config/config_file.h"
#include "cli/config/environment_settings.h"
#include "cli/config/horovod_config.h"
#include "cli/os/machine.h"
#include "cli/user_error.h"
#include "slurm/environment.h"

extern char** environ;

namespace hvd::cli {

Options parseWithSettings(const std::vector<std::string>& args) {
  // The command line alone first: it names the config file and the profile.
  Options first = parseOptions(args);
  if (first.noConfig || first.help || first.showVersion) return first;
  slurm::Environment env = slurm::environmentFrom(environ);
  const std::vector<SettingKey> keys = settingKeys();

  std::string path = first.configFile;
  bool explicitPath = !path.empty();
  if (auto fromEnv = slurm::lookup(env, "HVDRUN_CONFIG_FILE"); !explicitPath && fromEnv && !fromEnv->empty()) {
    path = std::string(*fromEnv);
    explicitPath = true;
  }
  if (!explicitPath) path = defaultConfigPath(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"));
  std::string profile = first.profile;
  if (auto fromEnv = slurm::lookup(env, kProfileVariable); profile.empty() && fromEnv) profile = std::string(*fromEnv);

  std::vector<SettingLayer> layers;
  std::vector<std::string> notes;
  std::error_code ec;
  if (!path.empty() && (explicitPath || std::filesystem::exists(path, ec))) {
    auto text = readTextFile(path);
    if (!text) {
      throw UserError(ExitCode::kUsage, "cannot read the config file: " + text.status().message(),
                      "--config-file (or HVDRUN_CONFIG_FILE) names a TOML file; --no-config ignores config files");
    }
    if (isHorovodConfig(path, *text)) {
      // horovodrun's YAML file (horovodrun --config-file), read as the settings it stands for.
      if (!profile.empty()) {
        throw UserError(ExitCode::kUsage, "profile '" + profile + "' asked for, but " + path +
                                              " is horovodrun's YAML config, which has no profiles",
                        "profiles live in hvdrun's TOML config (docs/config.md)");
      }
      HorovodConfig horovod = valueOrThrow(horovodConfig(path, *text));
      layers.push_back(std::move(horovod.layer));
      notes = std::move(horovod.notes);
    } else {
      layers.push_back(valueOrThrow(configFileLayer(path, *text, profile, keys)));
    }
  } else if (!profile.empty()) {
    throw UserError(ExitCode::kUsage, "profile '" + profile + "' asked for, but there is no config file" +
                                          (path.empty() ? "" : " (looked for " + path + ")"),
                    "give one with --config-file FILE; docs/config.md shows the format");
  }
  // The variables the environment layer skips are handled above.
  slurm::Environment settingsEnv = env;
  settingsEnv.erase("HVDRUN_CONFIG_FILE");
  layers.push_back(valueOrThrow(environmentLayer(settingsEnv, keys)));
  Options options = parseOptions(args, layers);
  options.notes.insert(options.notes.end(), notes.begin(), notes.end());
  return options;
}

}  // namespace hvd::cli
