// slurm/sbatch_directives_test.cc: #SBATCH lines from a request, and what is refused.
#include "slurm/sbatch_directives.h"

#include <catch2/catch.hpp>

using hvd::slurm::SbatchRequest;

namespace {

std::vector<std::string> linesOf(const SbatchRequest& r) {
  auto lines = hvd::slurm::sbatchDirectives(r);
  INFO(lines.status().message());
  REQUIRE(lines.isOk());
  return *lines;
}

std::string errorOf(const SbatchRequest& r) {
  auto lines = hvd::slurm::sbatchDirectives(r);
  REQUIRE_FALSE(lines.isOk());
  return lines.status().message();
}

SbatchRequest named(std::string name) {
  SbatchRequest r;
  r.jobName = std::move(name);
  return r;
}

}  // namespace

TEST_CASE("a bare request asks for one node, one task and the USR2 notice 90 s before the end", "[unit]") {
  CHECK(linesOf(named("train")) == std::vector<std::string>{
                                       "#SBATCH --error=%x-%j.err", "#SBATCH --job-name=train",
                                       "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1",
                                       "#SBATCH --output=%x-%j.out", "#SBATCH --signal=B:USR2@90"});
}

TEST_CASE("ranks per node default to the GPUs per node and nodes to what -np needs", "[unit]") {
  for (int gpus = 1; gpus <= 8; ++gpus) {
    for (int ranks = 1; ranks <= 40; ++ranks) {
      SbatchRequest r = named("t");
      r.gpusPerNode = gpus;
      r.ranks = ranks;
      auto g = hvd::slurm::sbatchGeometry(r);
      REQUIRE(g.isOk());
      CHECK(g->ntasksPerNode == gpus);
      CHECK(g->nodes == (ranks + gpus - 1) / gpus);
      auto lines = linesOf(r);
      bool hasNtasks = std::count(lines.begin(), lines.end(), "#SBATCH --ntasks=" + std::to_string(ranks)) == 1;
      CHECK(hasNtasks == (ranks % gpus != 0));  // only a partly filled last node needs it
    }
  }
}

TEST_CASE("without GPUs, -np spreads over the nodes given, as evenly as tasks per node allow", "[unit]") {
  SbatchRequest r = named("t");
  r.ranks = 10;
  r.nodes = 3;
  auto g = hvd::slurm::sbatchGeometry(r);
  REQUIRE(g.isOk());
  CHECK(g->ntasksPerNode == 4);
  CHECK(g->nodes == 3);
}

TEST_CASE("a rank count that does not fit the nodes and tasks given is refused with the arithmetic", "[unit]") {
  SbatchRequest r = named("t");
  r.ranks = 9;
  r.nodes = 2;
  r.ntasksPerNode = 4;
  auto g = hvd::slurm::sbatchGeometry(r);
  REQUIRE_FALSE(g.isOk());
  CHECK(g.status().code() == hvd::Errc::kInvalidUsage);
  CHECK(g.status().message() == "-np 9 does not fit 2 node(s) x 4 rank(s) per node");
}

TEST_CASE("every optional #SBATCH line appears, sorted, with requeue keeping the output files", "[unit]") {
  SbatchRequest r = named("big job");
  r.gpusPerNode = 4;
  r.nodes = 2;
  r.cpusPerTask = 8;
  r.time = "1-12:00:00";
  r.partition = "a100";
  r.account = "proj";
  r.qos = "high";
  r.constraint = "ib&nvlink";
  r.mem = "256G";
  r.requeue = true;
  r.signal = "USR1";
  r.signalSeconds = 300;
  r.extraArgs = {"--exclusive", "--mail-type=END"};
  CHECK(linesOf(r) == std::vector<std::string>{
                          "#SBATCH --account=proj", "#SBATCH --constraint=ib&nvlink", "#SBATCH --cpus-per-task=8",
                          "#SBATCH --error=%x-%j.err", "#SBATCH --exclusive", "#SBATCH --gpus-per-node=4",
                          "#SBATCH --job-name=\"big job\"", "#SBATCH --mail-type=END", "#SBATCH --mem=256G",
                          "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --open-mode=append",
                          "#SBATCH --output=%x-%j.out", "#SBATCH --partition=a100", "#SBATCH --qos=high",
                          "#SBATCH --requeue", "#SBATCH --signal=B:USR1@300", "#SBATCH --time=1-12:00:00"});
}

TEST_CASE("times sbatch accepts pass and others are refused", "[unit]") {
  for (const char* good : {"30", "30:00", "2:00:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED", "infinite"}) {
    CHECK(hvd::slurm::isSlurmTime(good));
  }
  for (const char* bad : {"", "2h", "1:2:3:4", "-5", "1-", "1.5", "12:00 "}) CHECK_FALSE(hvd::slurm::isSlurmTime(bad));
  SbatchRequest r = named("t");
  r.time = "2h";
  CHECK(errorOf(r) == "--time '2h': not a time sbatch takes (minutes, H:M:S, D-H, D-H:M:S or UNLIMITED)");
}

TEST_CASE("values an #SBATCH line cannot carry are refused, naming the option", "[unit]") {
  SbatchRequest r = named("two\nlines");
  CHECK(errorOf(r) == "--job-name 'two lines': a job script's #SBATCH line cannot hold a line break");
  r = named("say \"hi\"");
  CHECK(errorOf(r) == "--job-name 'say \"hi\"': a double quote cannot be passed through an #SBATCH line");
  r = named("t");
  r.mem = "lots";
  CHECK(errorOf(r) == "--mem 'lots': expected a size like 64G, 512M or 4000 (megabytes)");
}

TEST_CASE("an extra sbatch argument must be an option and must not repeat one hvdrun writes", "[unit]") {
  SbatchRequest r = named("t");
  r.extraArgs = {"exclusive"};
  CHECK(errorOf(r) == "--sbatch-arg 'exclusive': not an sbatch option (it must start with '-', e.g. --exclusive)");
  r.extraArgs = {"--nodes=4"};
  auto lines = hvd::slurm::sbatchDirectives(r);
  REQUIRE_FALSE(lines.isOk());
  CHECK(lines.status().message() == "--sbatch-arg '--nodes=4': hvdrun writes --nodes itself");
  CHECK(lines.status().hint() == "use hvdrun's own --nodes option (or its config key) instead");
}
