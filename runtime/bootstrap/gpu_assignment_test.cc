// runtime/bootstrap/gpu_assignment_test.cc: tables of rank reports in, verdict out; no GPU
// needed.
#include <catch2/catch.hpp>

#include "runtime/bootstrap/gpu_assignment.h"

using namespace hvd::bootstrap;

namespace {
GpuReport pinned(int rank, std::string host, std::string visible, std::string gpu) {
  GpuReport r;
  r.rank = rank;
  r.host = host;
  r.plannedHost = host;
  r.visibleSet = true;
  r.visible = visible;
  r.driverGpus = 1;
  r.gpu = gpu;
  return r;
}
}  // namespace

TEST_CASE("ranks pinned to distinct GPUs pass", "[unit]") {
  std::vector<GpuReport> reports{pinned(0, "n1", "0", "GPU-a"), pinned(1, "n1", "1", "GPU-b"),
                                 pinned(2, "n2", "0", "GPU-c"), pinned(3, "n2", "1", "GPU-d")};
  auto verdict = checkGpuAssignment(reports, false);
  CHECK(verdict.ok());
  CHECK(verdict.table.empty());
}

TEST_CASE("two ranks on one GPU fail naming both ranks and the GPU; only offenders go in the table", "[unit]") {
  std::vector<GpuReport> reports{pinned(1, "n1", "0", "GPU-a"), pinned(0, "n1", "0", "GPU-a"),
                                 pinned(2, "n2", "1", "GPU-c")};
  auto verdict = checkGpuAssignment(reports, false);
  REQUIRE(verdict.problems.size() == 1);
  CHECK(verdict.problems[0] == "ranks 0, 1 share GPU-a");
  CHECK(verdict.table ==
        "    rank  host  planned host  CUDA_VISIBLE_DEVICES  GPUs seen  GPU\n"
        "    0     n1    n1            0                     1          GPU-a\n"
        "    1     n1    n1            0                     1          GPU-a\n"
        "    (1 other rank(s) fine, not shown)\n");
  CHECK(checkGpuAssignment(reports, true).ok());  // --oversubscribe-gpus
}

TEST_CASE("a verdict says whether any GPU is held by two ranks, allowed or not", "[unit]") {
  std::vector<GpuReport> shared{pinned(0, "n1", "0", "GPU-a"), pinned(1, "n1", "0", "GPU-a")};
  std::vector<GpuReport> apart{pinned(0, "n1", "0", "GPU-a"), pinned(1, "n1", "1", "GPU-b")};
  CHECK(checkGpuAssignment(shared, true).shared);  // --oversubscribe-gpus: allowed, and said
  CHECK(checkGpuAssignment(shared, false).shared);
  CHECK_FALSE(checkGpuAssignment(apart, true).shared);
}

TEST_CASE("a planned GPU the driver does not show fails naming the rank, the variable and the host", "[unit]") {
  auto missing = pinned(3, "n2", "0,7", "");
  missing.driverGpus = 1;
  auto none = pinned(4, "n2", "5", "");
  none.driverGpus = 0;
  std::vector<GpuReport> reports{missing, none};
  auto verdict = checkGpuAssignment(reports, false);
  REQUIRE(verdict.problems.size() == 2);
  CHECK(verdict.problems[0] == "rank 3 was given CUDA_VISIBLE_DEVICES=0,7 but the driver shows it 1 GPU(s) on n2");
  CHECK(verdict.problems[1] == "rank 4 was given CUDA_VISIBLE_DEVICES=5 but the driver shows it 0 GPU(s) on n2");
}

TEST_CASE("ranks without a driver or without CUDA_VISIBLE_DEVICES are not judged on GPUs", "[unit]") {
  GpuReport cpu;
  cpu.rank = 0;
  cpu.host = "login";
  GpuReport noDriver = cpu;
  noDriver.rank = 1;
  noDriver.visibleSet = true;
  noDriver.visible = "0";
  noDriver.driverGpus = -1;
  GpuReport hidden = cpu;  // a TF parameter server on a GPU host: CUDA_VISIBLE_DEVICES=""
  hidden.rank = 2;
  hidden.visibleSet = true;
  hidden.driverGpus = 0;
  std::vector<GpuReport> reports{cpu, noDriver, hidden};
  CHECK(checkGpuAssignment(reports, false).ok());
}

TEST_CASE("ranks planned on one host but running on two fail naming both hosts", "[unit]") {
  auto a = pinned(0, "n1", "0", "GPU-a");
  auto b = pinned(1, "n7", "1", "GPU-b");
  b.plannedHost = "n1";
  std::vector<GpuReport> reports{a, b};
  auto verdict = checkGpuAssignment(reports, false);
  REQUIRE(verdict.problems.size() == 1);
  CHECK(verdict.problems[0] == "ranks planned on n1 run on different hosts: n1 (rank 0), n7 (rank 1)");
  // The other direction (two planned hosts, one host name) is not judged: network
  // namespaces and containers share host names legitimately.
  b.host = "n1";
  b.plannedHost = "n2";
  std::vector<GpuReport> shared{a, b};
  CHECK(checkGpuAssignment(shared, false).ok());
}

TEST_CASE("reports survive encoding and malformed text is refused", "[unit]") {
  auto r = pinned(12, "node\t07", "GPU-x,GPU-y", "GPU-1234");
  r.driverGpus = 2;
  auto back = decodeGpuReport(encodeGpuReport(r));
  REQUIRE(back.has_value());
  CHECK(back->rank == 12);
  CHECK(back->host == "node 07");
  CHECK(back->visible == "GPU-x,GPU-y");
  CHECK(back->driverGpus == 2);
  CHECK(back->gpu == "GPU-1234");
  CHECK(back->mps == -1);
  for (int mps : {0, 1}) {
    r.mps = mps;
    CHECK(decodeGpuReport(encodeGpuReport(r))->mps == mps);
  }
  GpuReport empty;
  CHECK(decodeGpuReport(encodeGpuReport(empty)).has_value());
  CHECK(decodeGpuReport("1\th\tp\t1\t0\t1\tg\t1").has_value());
  CHECK_FALSE(decodeGpuReport("").has_value());
  CHECK_FALSE(decodeGpuReport("x\th\tp\t1\t0\t1\tg\t1").has_value());
  CHECK_FALSE(decodeGpuReport("1\th\tp\t2\t0\t1\tg\t1").has_value());
  CHECK_FALSE(decodeGpuReport("1\th\tp\t1\t0\t1\tg\t2").has_value());
  CHECK_FALSE(decodeGpuReport("1\th\tp\t1\t0\t1\tg").has_value());
}

// Measured on an H200 (docs/benchmarks.md): two processes time-slicing a GPU wait about
// 0.15 ms for each small copy back; under MPS they do not.
TEST_CASE("ranks sharing a GPU without MPS are named in the verdict; under MPS or where unknown they are not",
          "[unit]") {
  auto a = pinned(0, "n1", "0", "GPU-a"), b = pinned(1, "n1", "0", "GPU-a"), c = pinned(2, "n2", "0", "GPU-c");
  a.mps = b.mps = c.mps = 0;
  std::vector<GpuReport> reports{b, a, c};
  auto verdict = checkGpuAssignment(reports, true);
  CHECK(verdict.ok());
  CHECK(verdict.sharedWithoutMps == "ranks 0, 1 share GPU-a on n1");
  a.mps = b.mps = 1;
  std::vector<GpuReport> underMps{a, b, c};
  CHECK(checkGpuAssignment(underMps, true).sharedWithoutMps.empty());
  a.mps = b.mps = -1;  // a driver that cannot tell
  std::vector<GpuReport> unknown{a, b, c};
  CHECK(checkGpuAssignment(unknown, true).sharedWithoutMps.empty());
  // Not shared: nothing to say, MPS or not.
  a.mps = 0;
  c.mps = 0;
  std::vector<GpuReport> apart{a, c};
  CHECK(checkGpuAssignment(apart, true).sharedWithoutMps.empty());
  // Two GPUs shared on two hosts: both named.
  auto d = pinned(3, "n2", "0", "GPU-c");
  a.mps = b.mps = d.mps = 0;
  std::vector<GpuReport> two{a, b, c, d};
  CHECK(checkGpuAssignment(two, true).sharedWithoutMps == "ranks 0, 1 share GPU-a on n1; ranks 2, 3 share GPU-c on n2");
}
