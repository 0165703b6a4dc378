// tests/e2e/hostlist_e2e_test.cc: `hvdrun hostlist` as a user sees it.
#include <catch2/catch.hpp>

#include "tests/support/hvdrun_runner.h"

using hvd::test::runHvdrun;

namespace {

hvd::cli::CapturedRun withStdin(const std::vector<std::string>& args, const std::string& input) {
  hvd::cli::RunOptions options;
  options.stdinText = input;
  return runHvdrun(args, options);
}

}  // namespace

TEST_CASE("hvdrun hostlist expands one name per line in Slurm's order", "[e2e][hostlist]") {
  auto run = runHvdrun({"hostlist", "rack[1-2]-node[01-02]", "gpu9"});
  CHECK(run.exitCode == 0);
  CHECK(run.out == "rack1-node01\nrack1-node02\nrack2-node01\nrack2-node02\ngpu9\n");
}

TEST_CASE("hvdrun hostlist compresses, sorts and counts, reading standard input lines", "[e2e][hostlist]") {
  CHECK(withStdin({"hostlist", "--compress"}, "n3\nn1\nn2\n").out == "n[3,1-2]\n");
  CHECK(withStdin({"hostlist", "-s"}, "n3\nn1 n2\n").out == "n[1-3]\n");
  CHECK(withStdin({"hostlist", "--count", "-"}, "node[01-10],x\n").out == "11\n");
  CHECK(runHvdrun({"hostlist", "-c", "n09", "n10", "n11"}).out == "n[09-11]\n");
}

TEST_CASE("an invalid hostlist names the position and exits 2", "[e2e][hostlist]") {
  auto run = runHvdrun({"hostlist", "tux[0-3]-ib"});
  CHECK(run.exitCode == 2);
  CHECK(run.out.empty());
  CHECK(run.err ==
        "hvdrun: error: invalid hostlist 'tux[0-3]-ib' at position 9: '-ib' follows the last ']' in 'tux[0-3]-ib' "
        "(text may stand between bracket groups, not after the last one)\n"
        "  hint: brackets hold numbers and ranges: node[01-04,07]; text may follow a bracket only when another "
        "bracket comes later\n");
}

TEST_CASE("conflicting hostlist modes and unknown flags are usage errors", "[e2e][hostlist]") {
  auto both = runHvdrun({"hostlist", "-c", "-n", "x"});
  CHECK(both.exitCode == 2);
  CHECK(both.err == "hvdrun: error: hostlist: choose one of --expand, --compress, --sorted and --count\n"
                    "  hint: see 'hvdrun hostlist --help'\n");
  auto bogus = runHvdrun({"hostlist", "--bogus"});
  CHECK(bogus.exitCode == 2);
  CHECK(bogus.err.rfind("hvdrun: error: hostlist: ", 0) == 0);
}
