// tests/slurm/slurm_jobs.cc: Slurm's commands as the cluster tests use them.
#include "tests/slurm/slurm_jobs.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/skip.h"

namespace hvd::test {

void requireTestbed() {
  if (std::getenv("HVD_TESTBED_DIR") == nullptr) skipTest("not running under tests/slurm/testbed.sh");
}

cli::CapturedRun runCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  cli::RunOptions options;
  options.timeout = timeout;
  auto r = cli::runAndCapture(argv, options);
  REQUIRE(r.isOk());
  return *r;
}

std::string jobField(const std::string& id, const std::string& field) {
  auto r = runCommand({"scontrol", "show", "job", id});
  std::smatch m;
  std::regex pattern("\\b" + field + "=(\\S+)");
  return std::regex_search(r.out, m, pattern) ? m[1].str() : "";
}

void waitFor(const std::string& what, const std::function<bool()>& until, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!until()) {
    INFO("waiting for " << what);
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void waitForEnd(const std::string& id, std::chrono::seconds limit) {
  waitFor("job " + id + " to end", [&] { return runCommand({"squeue", "-h", "-j", id, "-o", "%T"}).out.empty(); },
          limit);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hvd::test
