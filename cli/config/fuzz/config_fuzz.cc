// cli/config/fuzz/config_fuzz.cc: libFuzzer target for config files. Any text, read as a
// config file with and without a profile, must give a layer or a kInvalidArgument that
// names the file (or the missing profile); a layer must then parse as settings under an
// empty command line without crashing (a usage error is fine: values are checked there).
// Read as horovodrun's YAML config too, the same holds.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/config/config_file.h"
#include "cli/config/horovod_config.h"
#include "cli/user_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<hvd::cli::SettingKey> keys = hvd::cli::settingKeys();
  std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* profile : {"", "alpha"}) {
    auto layer = hvd::cli::configFileLayer("fuzz.toml", text, profile, keys);
    if (!layer.isOk()) {
      std::string message = layer.status().message();  // status() returns a copy
      bool named = message.rfind("fuzz.toml", 0) == 0 || message.rfind("no profile '", 0) == 0;
      if (layer.status().code() != hvd::Errc::kInvalidArgument || !named) {
        std::fprintf(stderr, "unexpected error: %s\n", message.c_str());
        std::abort();
      }
      continue;
    }
    try {
      hvd::cli::parseOptions({"prog"}, {*layer});
    } catch (const hvd::cli::UserError& e) {
      if (e.code() != hvd::cli::ExitCode::kUsage) std::abort();
    }
  }
  // The same text as horovodrun's YAML config: a layer, or an error naming the file's line.
  (void)hvd::cli::isHorovodConfig("fuzz.yaml", text);
  auto horovod = hvd::cli::horovodConfig("fuzz.yaml", text);
  if (!horovod.isOk()) {
    std::string message = horovod.status().message();
    if (horovod.status().code() != hvd::Errc::kInvalidArgument || message.rfind("fuzz.yaml:", 0) != 0) {
      std::fprintf(stderr, "unexpected error: %s\n", message.c_str());
      std::abort();
    }
    return 0;
  }
  try {
    hvd::cli::parseOptions({"prog"}, {horovod->layer});
  } catch (const hvd::cli::UserError& e) {
    if (e.code() != hvd::cli::ExitCode::kUsage) std::abort();
  }
  return 0;
}
