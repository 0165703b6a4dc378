// cli/config/environment_settings_test.cc: HVDRUN_* variables as a settings layer.
#include "cli/config/environment_settings.h"

#include <catch2/catch.hpp>

using Env = std::map<std::string, std::string, std::less<>>;

TEST_CASE("HVDRUN_<KEY> variables set the option of that name, flags and lists included", "[unit][config]") {
  auto layer = hvd::cli::environmentLayer(
      Env{{"HVDRUN_NUM_PROC", "4"}, {"HVDRUN_MPI", "yes"}, {"HVDRUN_NO_GPU", "0"}, {"HVDRUN_MODULES", "a\nb c\n"},
          {"HVDRUN_PROFILE", "alpha"}, {"PATH", "/bin"}},
      hvd::cli::settingKeys());
  REQUIRE(layer.isOk());
  CHECK(layer->values.at("num-proc") == std::vector<std::string>{"4"});
  CHECK(layer->values.at("mpi") == std::vector<std::string>{"true"});
  CHECK(layer->values.at("no-gpu") == std::vector<std::string>{"false"});
  CHECK(layer->values.at("modules") == std::vector<std::string>{"a", "b c"});
  CHECK(layer->values.size() == 4);
}

TEST_CASE("an HVDRUN_ variable that names no setting is an error with a suggestion", "[unit][config]") {
  auto layer = hvd::cli::environmentLayer(Env{{"HVDRUN_PARTITON", "gpu"}}, hvd::cli::settingKeys());
  REQUIRE_FALSE(layer.isOk());
  CHECK(layer.status().message() == "unknown setting variable HVDRUN_PARTITON (did you mean HVDRUN_PARTITION?)");
  auto flag = hvd::cli::environmentLayer(Env{{"HVDRUN_MPI", "maybe"}}, hvd::cli::settingKeys());
  REQUIRE_FALSE(flag.isOk());
  CHECK(flag.status().message() == "HVDRUN_MPI='maybe': expected 1 or 0 (true/false, yes/no, on/off)");
}

TEST_CASE("an HVDRUN_ variable spelled as one of an option's other names suggests the setting's own name", "[unit][config]") {
  // HVDRUN_NP was answered "did you mean HVDRUN_MPI?", a different option.
  auto np = hvd::cli::environmentLayer(Env{{"HVDRUN_NP", "4"}}, hvd::cli::settingKeys());
  REQUIRE_FALSE(np.isOk());
  CHECK(np.status().message() == "unknown setting variable HVDRUN_NP (did you mean HVDRUN_NUM_PROC?)");
  auto hosts = hvd::cli::environmentLayer(Env{{"HVDRUN_H", "a:2"}}, hvd::cli::settingKeys());
  REQUIRE_FALSE(hosts.isOk());
  CHECK(hosts.status().message() == "unknown setting variable HVDRUN_H (did you mean HVDRUN_HOSTS?)");
  auto perNode = hvd::cli::environmentLayer(Env{{"HVDRUN_NPERNODE", "2"}}, hvd::cli::settingKeys());
  REQUIRE_FALSE(perNode.isOk());
  CHECK(perNode.status().message() == "unknown setting variable HVDRUN_NPERNODE (did you mean HVDRUN_NPROC_PER_NODE?)");
}

TEST_CASE("variable names are the keys upper-cased with underscores", "[unit][config]") {
  CHECK(hvd::cli::variableFor("num-proc") == "HVDRUN_NUM_PROC");
  CHECK(hvd::cli::variableFor("sbatch-args") == "HVDRUN_SBATCH_ARGS");
}
