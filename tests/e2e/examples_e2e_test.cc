// tests/e2e/examples_e2e_test.cc: every program in examples/ runs here, through hvdrun.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;

namespace {

hvd::cli::RunOptions options() {
  hvd::cli::RunOptions o;
  o.env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES"});
  o.timeout = std::chrono::seconds(120);
  return o;
}

// "epoch E loss L accuracy A" lines printed by rank 0.
std::vector<std::pair<double, double>> curve(const std::string& out) {
  std::vector<std::pair<double, double>> points;
  std::regex line(R"(\[0\]<stdout>:epoch \d+ loss ([0-9.]+) accuracy ([0-9.]+))");
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) points.emplace_back(std::stod(m[1]), std::stod(m[2]));
  }
  return points;
}

}  // namespace

TEST_CASE("hello_ranks runs on four ranks, each with its own identity", "[e2e][examples]") {
  auto run = runHvdrun({"-np", "4", HVD_HELLO_RANKS_PATH}, options());
  CHECK(run.exitCode == 0);
  for (int r = 0; r < 4; ++r) CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:rank " + std::to_string(r) + " of 4") != std::string::npos);
}

TEST_CASE("training on 4 ranks follows the 1-rank loss curve with the same global batch", "[e2e][examples][mp]") {
  hvd::test::TempDir dir;
  std::string checkpoint = dir.path() + "/model.txt";
  auto four = runHvdrun({"-np", "4", HVD_TRAIN_SOFTMAX_PATH, "--epochs", "4", "--batch-per-rank", "16", "--lr", "0.05",
                         "--checkpoint", checkpoint}, options());
  auto one = runHvdrun({"-np", "1", HVD_TRAIN_SOFTMAX_PATH, "--epochs", "4", "--batch-per-rank", "64", "--lr", "0.2"}, options());
  INFO(four.out << four.err << one.out << one.err);
  REQUIRE(four.exitCode == 0);
  REQUIRE(one.exitCode == 0);
  auto a = curve(four.out), b = curve(one.out);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  for (size_t e = 0; e < 4; ++e) {
    // Float sums in another order differ in the last bits: a relative 1e-4 is ample.
    CHECK(std::abs(a[e].first - b[e].first) <= 1e-4 * (1 + b[e].first));
  }
  CHECK(a[3].first < a[0].first);  // it learns
  CHECK(a[3].second > 0.9);
  std::ifstream in(checkpoint);
  int values = 0;
  for (double v; in >> v;) ++values;
  CHECK(values == 8 * 3 + 3);  // W (8x3) and b (3), written by rank 0
}
