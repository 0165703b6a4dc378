// tests/e2e/stdin_e2e_test.cc: which rank reads hvdrun's stdin (--stdin), whichever way the
// ranks are started: one rank gets it whole, the others an empty one, never a share each.
// Over ssh (forwarded through the host agents): tests/ssh/ssh_launch_test.cc.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/support/hvdrun_runner.h"

using hvd::test::runHvdrun;
using hvd::test::withTimeout;

namespace {

// Every rank reads its stdin to the end and prints it as one line after its rank; the
// chosen rank starts last, so ranks sharing hvdrun's stdin would have taken it first.
std::vector<std::string> readerRanks(const std::string& lastToStart) {
  return {"sh", "-c",
          "if [ \"$HOROVOD_RANK\" = " + lastToStart + " ]; then sleep 0.3; fi; "
          "echo \"read $HOROVOD_RANK:$(tr '\\n' ' ')\""};
}

std::vector<std::string> withArgs(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

hvd::cli::RunOptions feeding(const std::string& text) {
  hvd::cli::RunOptions options = withTimeout(std::chrono::seconds(20));
  options.stdinText = text;
  return options;
}

}  // namespace

TEST_CASE("rank 0 reads the whole of hvdrun's stdin and every other rank reads an empty one", "[e2e]") {
  auto run = runHvdrun(withArgs({"-np", "4"}, readerRanks("0")), feeding("a\nb\nc\nd\n"));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:read 0:a b c d \n") != std::string::npos);
  for (int r = 1; r < 4; ++r) {
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:read " + std::to_string(r) + ":\n") != std::string::npos);
  }
}

TEST_CASE("hvdrun --stdin N gives hvdrun's stdin to the rank it names and none to the others", "[e2e]") {
  auto run = runHvdrun(withArgs({"-np", "3", "--stdin", "2"}, readerRanks("2")), feeding("x\ny\n"));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[2]<stdout>:read 2:x y \n") != std::string::npos);
  CHECK(run.out.find("[0]<stdout>:read 0:\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:read 1:\n") != std::string::npos);
}

TEST_CASE("hvdrun --stdin none gives every rank an empty stdin", "[e2e]") {
  auto run = runHvdrun(withArgs({"-np", "2", "--stdin", "none"}, readerRanks("0")), feeding("x\n"));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:read 0:\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:read 1:\n") != std::string::npos);
}

TEST_CASE("a --stdin rank outside the job or a word other than none is a usage error naming it", "[e2e]") {
  auto outside = runHvdrun({"-np", "2", "--stdin", "2", "true"});
  CHECK(outside.exitCode == 2);
  CHECK(outside.err.find("--stdin 2") != std::string::npos);
  CHECK(outside.err.find("2 ranks") != std::string::npos);
  auto all = runHvdrun({"-np", "2", "--stdin", "all", "true"});
  CHECK(all.exitCode == 2);
  CHECK(all.err.find("'all'") != std::string::npos);
  CHECK(all.err.find("hint:") != std::string::npos);
}

TEST_CASE("under --mpi only the rank --stdin names reads hvdrun's stdin", "[e2e][mpi]") {
  if (!hvd::test::haveMpirun()) hvd::test::skipTest("mpirun is not installed");
  auto run = runHvdrun(withArgs({"--mpi", "-np", "2", "--stdin", "1"}, readerRanks("1")), feeding("m\n"));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[1]<stdout>:read 1:m \n") != std::string::npos);
  CHECK(run.out.find("[0]<stdout>:read 0:\n") != std::string::npos);
}
