// tests/e2e/usage_e2e_test.cc: what a user sees for --help, --version and bad command lines.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::runHvdrun;

TEST_CASE("a misspelt option prints one error line with a suggestion and exits 2", "[e2e]") {
  auto run = runHvdrun({"--chek-build"});
  CHECK(run.exitCode == 2);
  CHECK(run.out.empty());
  CHECK(run.err == "hvdrun: error: unknown option '--chek-build'\n  hint: did you mean '--check-build'?\n");
}

TEST_CASE("hvdrun without a program says so and shows the usage", "[e2e]") {
  auto run = runHvdrun({});
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: no program to run\n"
                   "  hint: usage: hvdrun -np N program [args...]; see 'hvdrun --help'\n");
}

TEST_CASE("a program without -np is a usage error with an example", "[e2e]") {
  auto run = runHvdrun({"./train"});
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: how many ranks? -np is missing\n  hint: e.g. hvdrun -np 4 ./train\n");
}

TEST_CASE("a bad -np value names the token and exits 2", "[e2e]") {
  auto run = runHvdrun({"-np", "4x", "./train"});
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: -np expects a whole number, got '4x'\n"
                   "  hint: run 'hvdrun --help' for the options\n");
}

TEST_CASE("a -np with no value is a usage error, not a crash", "[e2e]") {
  auto run = runHvdrun({"-np"});
  CHECK(run.exitCode == 2);
  CHECK(run.err.rfind("hvdrun: error: ", 0) == 0);
}

TEST_CASE("the help text lists grouped options and the exit codes, and exits 0", "[e2e]") {
  auto run = runHvdrun({"--help"});
  CHECK(run.exitCode == 0);
  CHECK(run.err.empty());
  CHECK(run.out.rfind("hvdrun: start and supervise", 0) == 0);
  for (const char* needle : {"Launch:", "Information:", "-np, --num-proc", "--check-build", "Exit codes:"}) {
    INFO(needle);
    CHECK(run.out.find(needle) != std::string::npos);
  }
}

TEST_CASE("the version output names the version, commit, compiler and compiled-in backends", "[e2e]") {
  auto run = runHvdrun({"--version"});
  CHECK(run.exitCode == 0);
  CHECK(run.out.rfind("hvdrun 0.1.0\ncommit: ", 0) == 0);
  CHECK(run.out.find("\ncompiler: GNU ") != std::string::npos);
  CHECK(run.out.find("\nbackends compiled in: tcp") != std::string::npos);
}

TEST_CASE("an -np past the cap is refused at once naming it even with --dry-run", "[e2e]") {
  auto run = runHvdrun({"--dry-run", "-np", "2147483647", "./train"});
  CHECK(run.exitCode == 2);
  CHECK(run.err == "hvdrun: error: -np 2147483647 is more ranks than hvdrun starts (at most 1048576)\n"
                   "  hint: check the number; hvdrun plans jobs of up to 1048576 ranks\n");
}

TEST_CASE("config host and template files that are devices or directories or pipes or huge are refused and never read", "[e2e]") {
  hvd::test::TempDir dir;
  std::string fifo = dir.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string big = dir.path() + "/big.toml";
  {
    std::ofstream out(big);
    out << std::string((16u << 20) + 10, '#');
  }
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"--config-file", "/dev/zero", "-np", "1", "true"}, "cannot read the config file: '/dev/zero' is a device"},
      {{"--config-file", "/dev/urandom", "-np", "1", "true"}, "cannot read the config file: '/dev/urandom' is a device"},
      {{"--config-file", dir.path(), "-np", "1", "true"}, "cannot read the config file: '" + dir.path() + "' is a directory"},
      {{"--hostfile", fifo, "-np", "1", "true"}, "cannot read --hostfile: '" + fifo + "' is a pipe"},
      {{"--config-file", big, "-np", "1", "true"}, "'" + big + "' is larger than 16 MiB"},
      {{"sbatch", "--dry-run", "--template", "/dev/zero", "-np", "1", "--", "true"}, "'/dev/zero' is a device"},
  };
  for (const auto& c : cases) {
    auto run = runHvdrun(c.args);
    INFO(run.err);
    CHECK(run.exitCode == 2);
    CHECK(run.err.find("hvdrun: error: ") == 0);
    CHECK(run.err.find(c.error) != std::string::npos);
  }
}

TEST_CASE("control bytes of a bad token reach the terminal escaped so an error cannot rewrite the screen", "[e2e]") {
  hvd::test::TempDir dir;
  std::string hostfile = dir.path() + "/hosts";
  std::ofstream(hostfile) << "node\x1b]0;owned\x07\x1b[2J:2\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-np", "1", "--hostfile", hostfile, "true"},
        std::vector<std::string>{"-np", "1", "-x", "A\x1b[2JB=1", "true"}}) {
    auto run = runHvdrun(args);
    INFO(run.err);
    CHECK(run.exitCode == 2);
    CHECK(run.err.find('\x1b') == std::string::npos);
    CHECK(run.err.find('\x07') == std::string::npos);
    CHECK(run.err.find("\\x1b[2J") != std::string::npos);
  }
}
