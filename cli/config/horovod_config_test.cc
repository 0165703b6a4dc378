// cli/config/horovod_config_test.cc: horovodrun's YAML config files read as hvdrun settings.
#include "cli/config/horovod_config.h"

#include <catch2/catch.hpp>

using hvd::cli::HorovodConfig;
using hvd::cli::horovodConfig;
using hvd::cli::isHorovodConfig;

namespace {

// Horovod's own example (its docs and test data), every section.
const char* kExample = R"(# horovodrun --config-file
controller: gloo

params:
  fusion_threshold_mb: 32
  cycle_time_ms: 10
  cache_capacity: 2048
  hierarchical_allreduce: true
  hierarchical_allgather: true

autotune:
  enabled: true
  log_file: 'horovod_autotune_log.txt'
  warmup_samples: 5
  steps_per_sample: 20
  bayes_opt_max_samples: 50
  gaussian_process_noise: 0.9

timeline:
  filename: 'horovod_timeline.json'
  mark_cycles: true

stall_check:
  enabled: true
  warning_time_seconds: 120
  shutdown_time_seconds: 240

library_options:
  mpi_threads_disable: true
  num_nccl_streams: 2
  ccl_bgt_affinity: 1
  gloo_timeout_seconds: 60

logging:
  level: INFO
  hide_timestamp: true
)";

HorovodConfig read(const std::string& text) {
  auto config = horovodConfig("horovod.yaml", text);
  INFO(config.status().message());
  REQUIRE(config.isOk());
  return *config;
}

std::string errorOf(const std::string& text) {
  auto config = horovodConfig("horovod.yaml", text);
  REQUIRE_FALSE(config.isOk());
  CHECK(config.status().code() == hvd::Errc::kInvalidArgument);
  return config.status().message();
}

}  // namespace

TEST_CASE("horovodrun's config file is told from hvdrun's by its name or its sections", "[unit][config]") {
  CHECK(isHorovodConfig("horovod.yaml", ""));
  CHECK(isHorovodConfig("conf/run.YML", "x = 1"));
  CHECK(isHorovodConfig("config", "# tuned\nparams:\n  cycle_time_ms: 1\n"));
  CHECK(isHorovodConfig("config", "controller: mpi\n"));
  CHECK_FALSE(isHorovodConfig("config.toml", "fusion-threshold-mb = 64\n[profile.a]\npartition = \"x\"\n"));
  CHECK_FALSE(isHorovodConfig("config.toml", "params = 1\n"));
}

TEST_CASE("horovodrun's example config becomes hvdrun's settings and names what changes nothing here",
          "[unit][config]") {
  HorovodConfig config = read(kExample);
  const auto& v = config.layer.values;
  auto one = [&](const std::string& key) { return v.count(key) ? v.at(key).front() : std::string("(unset)"); };
  CHECK(config.layer.origin == "horovod.yaml");
  CHECK(one("gloo") == "true");
  CHECK(one("fusion-threshold-mb") == "32");
  CHECK(one("cycle-time-ms") == "10");
  CHECK(one("cache-capacity") == "2048");
  CHECK(one("timeline-filename") == "horovod_timeline.json");
  CHECK(one("timeline-mark-cycles") == "true");
  CHECK(one("stall-check-warning-time-seconds") == "120");
  CHECK(one("stall-check-shutdown-time-seconds") == "240");
  CHECK(one("gloo-timeout-seconds") == "60");
  CHECK(one("log-level") == "INFO");
  CHECK(v.count("no-stall-check") == 0);  // enabled: true is hvdrun's default
  CHECK(v.size() == 10);
  REQUIRE(config.notes.size() == 1);
  CHECK(config.notes[0] ==
        "horovod.yaml: params.hierarchical_allreduce, params.hierarchical_allgather, autotune (all of it), "
        "library_options.mpi_threads_disable, library_options.num_nccl_streams, library_options.ccl_bgt_affinity, "
        "logging.hide_timestamp (horovodrun's) change nothing here, as on the command line");
  CHECK(read("params:\n  hierarchical_allreduce: true\n  hierarchical_allgather: false\n").notes ==
        std::vector<std::string>{"horovod.yaml: params.hierarchical_allreduce (horovodrun's) changes nothing here, as "
                                 "on the command line"});
}

TEST_CASE("a stall check turned off and the mpi controller read as hvdrun's flags", "[unit][config]") {
  HorovodConfig off = read("controller: mpi\nstall_check:\n  enabled: false\n");
  CHECK(off.layer.values.at("mpi") == std::vector<std::string>{"true"});
  CHECK(off.layer.values.at("no-stall-check") == std::vector<std::string>{"true"});
  CHECK(off.notes.empty());
  HorovodConfig quoted = read("timeline:\n  filename: \"/tmp/a b.json\"  # where\n  mark_cycles: False\n");
  CHECK(quoted.layer.values.at("timeline-filename") == std::vector<std::string>{"/tmp/a b.json"});
  CHECK(quoted.layer.values.at("timeline-mark-cycles") == std::vector<std::string>{"false"});
}

TEST_CASE("a horovodrun config hvdrun cannot read is refused naming the line and what it expected", "[unit][config]") {
  CHECK(errorOf("parms:\n  cycle_time_ms: 1\n") ==
        "horovod.yaml:1: unknown section 'parms' of horovodrun's config (did you mean 'params'?)");
  CHECK(errorOf("params:\n  cycle_time: 1\n") ==
        "horovod.yaml:2: unknown key 'cycle_time' in params (did you mean 'cycle_time_ms'?)");
  CHECK(errorOf("controller: tcp\n") == "horovod.yaml:1: controller must be gloo or mpi, not 'tcp'");
  CHECK(errorOf("timeline:\n  mark_cycles: maybe\n") ==
        "horovod.yaml:2: timeline.mark_cycles must be true or false, not 'maybe'");
  CHECK(errorOf("params:\n  - 1\n") ==
        "horovod.yaml:2: hvdrun reads horovodrun's config as sections of 'key: value' lines, and this is not one");
  CHECK(errorOf("  cycle_time_ms: 1\n") ==
        "horovod.yaml:1: 'cycle_time_ms' is not in a section (params:, timeline:, ...)");
}
