// tests/e2e/bench_e2e_test.cc: the collective benchmark checks what it times. Its figures
// are never asserted (a 2-core machine moves them by 2x); its #wrong column is, on a short
// sweep, because a benchmark that times wrong answers would mislead every table built on it.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;

namespace {

struct Row {
  size_t bytes = 0;
  double time = 0, busbw = 0;
  long wrong = -1;
};

// Rank 0's nccl-tests lines: size count type redop root time algbw busbw #wrong.
std::vector<Row> rows(const std::string& out) {
  std::vector<Row> result;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    Row row;
    std::string count, type, redop, root, algbw;
    if (fields >> row.bytes >> count >> type >> redop >> root >> row.time >> algbw >> row.busbw >> row.wrong) result.push_back(row);
  }
  return result;
}

std::vector<Row> sweep(const std::string& impl, const std::string& op, int np) {
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_SHARED_MEMORY=0"});
  o.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"--no-prefix", "-np", std::to_string(np), HVD_COLLECTIVE_PERF_PATH, "--impl", impl, "--op", op,
                        "--min", "4", "--max", "262144", "--iters", "3"}, o);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  return rows(run.out);
}

}  // namespace

TEST_CASE("the collective benchmark times correct results at every size for ours and for the bare TCP wire",
          "[e2e][bench][mp]") {
  for (std::string impl : {"hvd", "tcp-wire"}) {
    for (std::string op : {"allreduce", "broadcast"}) {
      for (int np : {2, 3}) {
        INFO(impl << " " << op << " np=" << np);
        auto table = sweep(impl, op, np);
        REQUIRE(table.size() == 17);  // 4 B to 256 KiB by doubling
        for (const auto& row : table) {
          INFO("size " << row.bytes);
          CHECK(row.wrong == 0);
          CHECK(row.time > 0);
          if (row.bytes >= 65536) CHECK(row.busbw > 0);  // printed to 3 decimals: tiny sizes show 0.000
        }
      }
    }
  }
}

TEST_CASE("the collective benchmark refuses an implementation it does not know", "[e2e][bench]") {
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  o.timeout = std::chrono::seconds(30);
  auto run = runHvdrun({"-np", "1", HVD_COLLECTIVE_PERF_PATH, "--impl", "gloo"}, o);
  CHECK(run.exitCode != 0);
  CHECK((run.out + run.err).find("unknown --impl 'gloo'") != std::string::npos);
}

TEST_CASE("with --seconds the collective benchmark times each size for about that long", "[e2e][bench][mp]") {
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  o.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"--no-prefix", "-np", "2", HVD_COLLECTIVE_PERF_PATH, "--impl", "hvd", "--op", "allreduce", "--min",
                        "65536", "--max", "262144", "--factor", "4", "--seconds", "0.5", "--samples", "1"}, o);
  REQUIRE(run.exitCode == 0);
  // "#samples <bytes> <us> <us> ...": every call timed, up to 1000 a line.
  std::map<size_t, double> timed;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string tag;
    size_t bytes = 0;
    if (!(fields >> tag >> bytes) || tag != "#samples") continue;
    for (double us = 0; fields >> us;) timed[bytes] += us / 1e6;
  }
  REQUIRE(timed.size() == 2);
  for (const auto& [bytes, seconds] : timed) {
    INFO("size " << bytes << ": " << seconds << " s of calls");
    CHECK(seconds >= 0.4);
    CHECK(seconds < 5);
  }
}
