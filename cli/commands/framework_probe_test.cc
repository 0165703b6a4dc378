// cli/commands/framework_probe_test.cc: the Python's answer read into [X]/[ ] and reasons.
#include "cli/commands/framework_probe.h"

#include <catch2/catch.hpp>

namespace {

hvd::cli::FrameworkReport empty(const std::string& python) {
  hvd::cli::FrameworkReport report;
  report.python = python;
  report.frameworks = {{"PyTorch", "torch", "hvd.torch", false, false, "", ""},
                       {"Accelerate", "accelerate", "", true, false, "", ""}};
  return report;
}

}  // namespace

TEST_CASE("a framework is available when installed and hvd imports with the module that serves it", "[unit]") {
  auto report = empty("/v/bin/python3");
  hvd::cli::readProbeAnswer("python\t3.11.2\t/v/bin/python3\nhvd\t/v/lib/site-packages\n"
                            "module\ttorch\t1\ttorch 2.9.1\t1\nmodule\taccelerate\t1\taccelerate 1.15.0\t\n",
                            report);
  CHECK(report.pythonVersion == "3.11.2");
  CHECK(report.hvdLocation == "/v/lib/site-packages");
  CHECK(report.problem.empty());
  CHECK(report.frameworks[0].available);
  CHECK(report.frameworks[0].version == "torch 2.9.1");
  CHECK(report.frameworks[1].available);
}

TEST_CASE("a framework that is missing, or that this hvd has no module for, is not available and says why", "[unit]") {
  auto report = empty("/v/bin/python3");
  hvd::cli::readProbeAnswer("python\t3.11.2\t/v/bin/python3\nhvd\t/v/lib\nmodule\ttorch\t1\ttorch 2.9.1\t0\n"
                            "module\taccelerate\t0\t\t\n",
                            report);
  CHECK_FALSE(report.frameworks[0].available);
  CHECK(report.frameworks[0].reason == "this hvd has no hvd.torch");
  CHECK_FALSE(report.frameworks[1].available);
  CHECK(report.frameworks[1].reason == "not installed in /v/bin/python3");
}

TEST_CASE("without hvd nothing is available and every framework carries the import's error", "[unit]") {
  auto report = empty("/usr/bin/python3");
  hvd::cli::readProbeAnswer("python\t3.11.2\t/usr/bin/python3\nnohvd\tModuleNotFoundError: No module named 'hvd'\n"
                            "module\ttorch\t1\ttorch 2.9.1\t\nmodule\taccelerate\t0\t\t\n",
                            report);
  CHECK(report.problem == "hvd cannot be imported in /usr/bin/python3: ModuleNotFoundError: No module named 'hvd'");
  CHECK_FALSE(report.frameworks[0].available);
  CHECK(report.frameworks[0].reason == report.problem);
  CHECK(report.frameworks[1].reason == "not installed in /usr/bin/python3");
}

TEST_CASE("an answer that names no framework leaves each with a reason, never a silent [ ]", "[unit]") {
  auto report = empty("/v/bin/python3");
  hvd::cli::readProbeAnswer("python\t3.11.2\t/v/bin/python3\nhvd\t/v/lib\n", report);
  CHECK(report.frameworks[0].reason == "not reported");
  CHECK_FALSE(report.frameworks[0].available);
}
