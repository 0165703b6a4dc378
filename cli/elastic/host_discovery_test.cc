// cli/elastic/host_discovery_test.cc: the discovery script's output, and real scripts run.
#include "cli/elastic/host_discovery.h"

#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using hvd::cli::discoverHosts;
using hvd::cli::DiscoveredHost;
using hvd::cli::parseDiscoveredHosts;

namespace {

// A directory of its own, removed at the end (never /tmp itself: mkdtemp must succeed).
struct ScratchDir {
  ScratchDir() {
    char pattern[] = "/tmp/hvd-discovery-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    dir = pattern;
  }
  ~ScratchDir() { std::filesystem::remove_all(dir); }
  const std::string& path() const { return dir; }
  std::string dir;
};

std::string scriptIn(const std::string& dir, const std::string& body) {
  std::string path = dir + "/discover.sh";
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("discovered hosts are read as host or host:slots and blank lines are skipped", "[unit]") {
  auto hosts = parseDiscoveredHosts("node01:4\n\n  node02  \r\nnode03:1\n", 2);
  REQUIRE(hosts);
  CHECK(*hosts == std::vector<DiscoveredHost>{{"node01", 4}, {"node02", 2}, {"node03", 1}});
  CHECK(parseDiscoveredHosts("", 1)->empty());
}

TEST_CASE("discovered hosts that are not host or host:slots or named twice are refused naming the line", "[unit]") {
  CHECK(parseDiscoveredHosts("node01:x\n", 1).status().message() ==
        "the host discovery script printed 'node01:x': the slots after ':' must be a number from 1 to 4096");
  CHECK(parseDiscoveredHosts("node01:0\n", 1).status().code() == hvd::Errc::kInvalidArgument);
  CHECK(parseDiscoveredHosts("a b:2\n", 1).status().message() ==
        "the host discovery script printed 'a b:2', which is not a host name");
  CHECK(parseDiscoveredHosts(":2\n", 1).status().code() == hvd::Errc::kInvalidArgument);
  CHECK(parseDiscoveredHosts("n:1\nn:2\n", 1).status().message() == "the host discovery script named n twice");
}

TEST_CASE("a discovery script is run and its failures say how it ended with its words", "[unit]") {
  ScratchDir dir;
  auto found = discoverHosts(scriptIn(dir.path(), "echo localhost:3"), 1, std::chrono::seconds(10));
  REQUIRE(found);
  CHECK(*found == std::vector<DiscoveredHost>{{"localhost", 3}});
  auto failed = discoverHosts(scriptIn(dir.path(), "echo no hosts today >&2; exit 4"), 1, std::chrono::seconds(10));
  CHECK(failed.status().code() == hvd::Errc::kRemote);
  CHECK(failed.status().message() == "the host discovery script " + dir.path() + "/discover.sh exited with code 4: "
                                     "no hosts today");
  auto slow = discoverHosts(scriptIn(dir.path(), "sleep 5"), 1, std::chrono::milliseconds(300));
  CHECK(slow.status().code() == hvd::Errc::kTimeout);
  auto missing = discoverHosts(dir.path() + "/none.sh", 1, std::chrono::seconds(10));
  CHECK(missing.status().code() == hvd::Errc::kRemote);
  CHECK(missing.status().message().find("exited with code 127: cannot run it: No such file or directory") !=
        std::string::npos);
}

TEST_CASE("a discovery script that prints without end is stopped at the output cap and named at once", "[unit]") {
  // Before, the script blocked on its full pipe until the timeout (30 s at start-up) ended it.
  ScratchDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto flood = discoverHosts(scriptIn(dir.path(), "yes localhost:1"), 1, std::chrono::seconds(20));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  REQUIRE_FALSE(flood);
  CHECK(flood.status().code() == hvd::Errc::kRemote);
  CHECK(flood.status().message() == "the host discovery script " + dir.path() +
                                        "/discover.sh printed more than 64 KiB, more than any list of hosts needs");
}

TEST_CASE("a discovery script's pipeline ends by SIGPIPE as in a shell though hvdrun ignores it", "[unit]") {
  // The script inherited hvdrun's ignored SIGPIPE: `yes | head -n 1` then had yes complain
  // "Broken pipe" into the output, which was read as a host line.
  ScratchDir dir;
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &before);  // as in hvdrun (cli/os/inherited_signals.h)
  auto found = discoverHosts(scriptIn(dir.path(), "yes localhost:2 | head -n 1"), 1, std::chrono::seconds(10));
  ::sigaction(SIGPIPE, &before, nullptr);
  INFO(found.status().message());
  REQUIRE(found);
  CHECK(*found == std::vector<DiscoveredHost>{{"localhost", 2}});
}
