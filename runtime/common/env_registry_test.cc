// runtime/common/env_registry_test.cc: strict reading, and the registry kept honest: the
// manual's table matches it, and no runtime code reads an HVD_ variable around it.
#include "runtime/common/env_registry.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using hvd::EnvSnapshot;

namespace {

hvd::Result<EnvSnapshot> readFrom(const std::map<std::string, std::string>& values) {
  return EnvSnapshot::read([&](const char* name) -> const char* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  });
}

std::string fileText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("unset variables read as their declared defaults", "[unit]") {
  auto env = readFrom({});
  REQUIRE(env.isOk());
  CHECK(env->integer("HVD_RANK") == 0);
  CHECK(env->integer("HVD_SIZE") == 1);
  CHECK(env->integer("HVD_TIMEOUT") == 30);
  CHECK_FALSE(env->isSet("HVD_SECRET_KEY"));
  CHECK(env->text("HVD_HOSTNAME").empty());
}

TEST_CASE("integers are read whole and within range, never as atoi would", "[unit]") {
  auto env = readFrom({{"HVD_RANK", "3"}, {"HVD_SIZE", "8"}, {"HVD_TIMEOUT", "5"}});
  REQUIRE(env.isOk());
  CHECK(env->integer("HVD_RANK") == 3);
  CHECK(env->integer("HVD_TIMEOUT") == 5);
  for (const char* bad : {"3x", "x", "", " 3", "-1", "99999999999999999999"}) {
    auto e = readFrom({{"HVD_RANK", bad}});
    REQUIRE_FALSE(e.isOk());
    CHECK(e.status().message() == std::string("HVD_RANK='") + bad + "': expected a whole number from 0 to 16777215");
  }
  auto timeout = readFrom({{"HVD_TIMEOUT", "0"}});
  REQUIRE_FALSE(timeout.isOk());
  CHECK(timeout.status().message() == "HVD_TIMEOUT='0': expected a whole number from 1 to 86400");
}

TEST_CASE("the manual's table of runtime variables lists exactly the registry, with its defaults", "[unit]") {
  std::string doc = fileText(std::string(HVD_SOURCE_DIR) + "/docs/environment.md");
  size_t section = doc.find("## What the runtime library reads");
  REQUIRE(section != std::string::npos);
  std::string table = doc.substr(section, doc.find("\n## ", section + 1) - section);
  std::map<std::string, std::string> documented;  // name -> default column
  std::regex row(R"(\| `((?:HVD|HOROVOD|SLURM)_[A-Z_]+|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR)` \| ([^|]*) \|)");
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    std::string fallback = (*it)[2].str();
    fallback = fallback.substr(0, fallback.find_last_not_of(' ') + 1);
    documented[(*it)[1].str()] = fallback == "-" ? "" : fallback;
  }
  std::map<std::string, std::string> declared;
  for (const hvd::EnvVar& v : hvd::runtimeVariables()) declared[std::string(v.name)] = std::string(v.fallback);
  CHECK(documented == declared);
}

TEST_CASE("runtime and collectives code reads HVD_ variables only through the registry", "[unit]") {
  std::regex direct(R"(getenv\(\s*"HVD_)");
  std::set<std::string> offenders;
  for (const char* folder : {"runtime", "collectives"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(HVD_SOURCE_DIR) + "/" + folder)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || name == "env_registry.cc" || name.find("_test.") != std::string::npos) continue;
      if (entry.path().extension() != ".cc" && entry.path().extension() != ".h") continue;
      std::string text = fileText(entry.path());
      if (std::regex_search(text, direct)) offenders.insert(entry.path().string());
    }
  }
  for (const std::string& o : offenders) UNSCOPED_INFO("reads an HVD_ variable directly: " << o);
  CHECK(offenders.empty());
}
