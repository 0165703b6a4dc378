// cli/config/config_file_test.cc: TOML config files, and the exact messages for bad ones.
#include "cli/config/config_file.h"

#include <catch2/catch.hpp>

using hvd::cli::configFileLayer;
using hvd::cli::SettingLayer;

namespace {

hvd::Result<SettingLayer> read(const std::string& text, const std::string& profile = "") {
  return configFileLayer("config.toml", text, profile, hvd::cli::settingKeys());
}

std::string errorOf(const std::string& text, const std::string& profile = "") {
  auto layer = read(text, profile);
  REQUIRE_FALSE(layer.isOk());
  CHECK(layer.status().code() == hvd::Errc::kInvalidArgument);
  return layer.status().message();
}

}  // namespace

TEST_CASE("a config file's keys become the values the command line would carry", "[unit][config]") {
  auto layer = read(R"(
num-proc = 8
mpi = true
kill-grace = 2.5
partition = "gpu"
modules = ["cuda/12.2", "nccl/2.18"]
env = { NCCL_DEBUG = "WARN", OMP_NUM_THREADS = "4" }
)");
  REQUIRE(layer.isOk());
  const auto& v = layer->values;
  CHECK(v.at("num-proc") == std::vector<std::string>{"8"});
  CHECK(v.at("mpi") == std::vector<std::string>{"true"});
  CHECK(v.at("kill-grace") == std::vector<std::string>{"2.5"});
  CHECK(v.at("partition") == std::vector<std::string>{"gpu"});
  CHECK(v.at("modules") == std::vector<std::string>{"cuda/12.2", "nccl/2.18"});
  CHECK(v.at("env") == std::vector<std::string>{"NCCL_DEBUG=WARN", "OMP_NUM_THREADS=4"});
}

TEST_CASE("a profile's values replace the top-level ones, chosen by name or by default-profile", "[unit][config]") {
  const std::string text = R"(
default-profile = "alpha"
partition = "debug"
time = "1:00:00"

[profile.alpha]
partition = "a100"
account = "proj-alpha"
gpus-per-node = 4

[profile.beta]
partition = "h100"
)";
  auto byDefault = read(text);
  REQUIRE(byDefault.isOk());
  CHECK(byDefault->values.at("partition") == std::vector<std::string>{"a100"});
  CHECK(byDefault->values.at("time") == std::vector<std::string>{"1:00:00"});
  CHECK(byDefault->values.at("gpus-per-node") == std::vector<std::string>{"4"});
  CHECK(byDefault->origin == "config.toml [profile.alpha]");
  auto beta = read(text, "beta");
  REQUIRE(beta.isOk());
  CHECK(beta->values.at("partition") == std::vector<std::string>{"h100"});
  CHECK(beta->values.count("account") == 0);
}

TEST_CASE("an unknown key names file, line and column and suggests the closest key", "[unit][config]") {
  CHECK(errorOf("time = \"1:00:00\"\npartiton = \"gpu\"\n") ==
        "config.toml:2:1: unknown key 'partiton' (did you mean 'partition'?)");
  CHECK(errorOf("[profile.alpha]\n  acount = \"x\"\n") ==
        "config.toml:2:3: unknown key 'acount' (did you mean 'account'?)");
  CHECK(errorOf("flux-capacitor = 1\n") == "config.toml:1:1: unknown key 'flux-capacitor'");
}

TEST_CASE("a value of the wrong type names the key and both types", "[unit][config]") {
  CHECK(errorOf("mpi = \"yes\"\n") == "config.toml:1:7: 'mpi' must be true or false, not a string");
  CHECK(errorOf("num-proc = [1, 2]\n") == "config.toml:1:12: 'num-proc' must be a string or a number, not an array");
  CHECK(errorOf("modules = [\"a\", 3.5, {x = 1}]\n") ==
        "config.toml:1:22: 'modules' must be a string, not a table");
  CHECK(errorOf("modules = {a = 1}\n") == "config.toml:1:11: 'modules' must be an array of strings, not a table");
}

TEST_CASE("a TOML syntax error is reported where the parser found it", "[unit][config]") {
  std::string message = errorOf("partition = \"gpu\"\ntime = \n");
  CHECK(message.rfind("config.toml:2:", 0) == 0);
}

TEST_CASE("a key spelled as one of an option's other names suggests the option's long name", "[unit][config]") {
  // 'np' was answered "did you mean 'mpi'?" and 'H' "did you mean 'x'?": other options.
  CHECK(errorOf("np = 4\n") == "config.toml:1:1: unknown key 'np' (did you mean 'num-proc'?)");
  CHECK(errorOf("H = \"a:2\"\n") == "config.toml:1:1: unknown key 'H' (did you mean 'hosts'?)");
  CHECK(errorOf("nproc_per_node = 2\n") == "config.toml:1:1: unknown key 'nproc_per_node' (did you mean 'nproc-per-node'?)");
  CHECK(errorOf("hostfile_path = 2\n").rfind("config.toml:1:1: unknown key 'hostfile_path'", 0) == 0);
}

TEST_CASE("asking for a profile the file lacks lists the ones it has", "[unit][config]") {
  auto layer = read("[profile.alpha]\n[profile.beta]\n", "gamma");
  REQUIRE_FALSE(layer.isOk());
  CHECK(layer.status().message() == "no profile 'gamma' in config.toml");
  CHECK(layer.status().hint() == "its profiles: alpha, beta");
}

TEST_CASE("a typo in a profile that is not chosen is still an error", "[unit][config]") {
  CHECK(errorOf("[profile.alpha]\npartition = \"a\"\n[profile.beta]\nqso = \"high\"\n") ==
        "config.toml:4:1: unknown key 'qso' (did you mean 'qos'?)");
}

TEST_CASE("the default config path follows XDG_CONFIG_HOME, then HOME", "[unit][config]") {
  CHECK(hvd::cli::defaultConfigPath("/x/cfg", "/home/u") == "/x/cfg/hvdrun/config.toml");
  CHECK(hvd::cli::defaultConfigPath(nullptr, "/home/u") == "/home/u/.config/hvdrun/config.toml");
  CHECK(hvd::cli::defaultConfigPath("relative", "/home/u") == "/home/u/.config/hvdrun/config.toml");
  CHECK(hvd::cli::defaultConfigPath(nullptr, nullptr).empty());
}
