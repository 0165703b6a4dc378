#include "cli/plan/thread_defaults.h"

#include <catch2/catch.hpp>
#include <set>

using hvd::cli::defaultThreadsPerRank;
using hvd::cli::interOpThreadsVariable;
using hvd::cli::threadVariables;

TEST_CASE("each rank gets its share of the usable cores, at least one", "[threads]") {
  CHECK(defaultThreadsPerRank(16, 4, std::nullopt) == 4);
  CHECK(defaultThreadsPerRank(2, 4, std::nullopt) == 1);
  CHECK(defaultThreadsPerRank(10, 3, std::nullopt) == 3);
  CHECK(defaultThreadsPerRank(8, 0, std::nullopt) == 8);
}

TEST_CASE("Slurm's cpus-per-task wins over the share", "[threads]") {
  CHECK(defaultThreadsPerRank(64, 8, 6) == 6);
  CHECK(defaultThreadsPerRank(64, 8, 0) == 8);
}

TEST_CASE("thread variables are set only where the user has not set them", "[threads]") {
  auto none = [](const std::string&) { return false; };
  CHECK(threadVariables(3, none) ==
        std::vector<std::string>{"OMP_NUM_THREADS=3", "MKL_NUM_THREADS=3", "OPENBLAS_NUM_THREADS=3"});
  std::set<std::string> user{"MKL_NUM_THREADS"};
  auto some = [&](const std::string& n) { return user.count(n) > 0; };
  CHECK(threadVariables(2, some) == std::vector<std::string>{"OMP_NUM_THREADS=2", "OPENBLAS_NUM_THREADS=2"});
  user = {"OMP_NUM_THREADS"};
  CHECK(threadVariables(2, some).empty());
}

TEST_CASE("a rank that may use one CPU gets two TensorFlow inter-op threads unless the user chose", "[threads]") {
  auto none = [](const std::string&) { return false; };
  CHECK(interOpThreadsVariable(1, none) == std::optional<std::string>("TF_NUM_INTEROP_THREADS=2"));
  CHECK(!interOpThreadsVariable(2, none));
  CHECK(!interOpThreadsVariable(64, none));
  CHECK(!interOpThreadsVariable(1, [](const std::string& n) { return n == "TF_NUM_INTEROP_THREADS"; }));
}
