// tests/e2e/usage_e2e_test.cc: what a user sees for --help, --version and bad command lines.
#include <catch2/catch.hpp>

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
