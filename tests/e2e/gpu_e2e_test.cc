// tests/e2e/gpu_e2e_test.cc: GPU collectives in real ranks under hvdrun: NCCL on one GPU,
// the staged path with ranks sharing it, and the start-up check that refuses two ranks on
// one GPU. Each test SKIPs, with the reason, on a machine without a usable GPU (CI);
// scripts/gpu-check.sh runs them on one.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>

#include "runtime/backends/backend_probe.h"
#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;

namespace {

const std::string kGpuRank = HVD_GPU_RANK_PATH;

void requireUsable(const char* backend) {
  if (kGpuRank.empty()) hvd::test::skipTest("built without CUDA");
  const auto* entry = hvd::backends::findBackend(backend);
  auto probe = hvd::backends::probeBackend(*entry);
  if (!probe.usable) hvd::test::skipTest(std::string(backend) + " is not usable here: " + probe.reason);
}

hvd::cli::RunOptions options(std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  hvd::cli::RunOptions o;
  o.env = environmentWith(extra);
  o.timeout = std::chrono::seconds(300);
  return o;
}

}  // namespace

TEST_CASE("NCCL reduces, broadcasts and gathers device buffers right for every type and op, 0 bytes to 256 MiB", "[e2e][gpu]") {
  requireUsable("nccl");
  auto run = runHvdrun({"-np", "1", kGpuRank, "--expect-backend", "nccl"}, options({"CUDA_VISIBLE_DEVICES=0"}));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("gpu_rank: rank 0 ok (backend nccl") != std::string::npos);
}

TEST_CASE("the staged path is right with 4 ranks sharing one GPU when --oversubscribe-gpus allows it", "[e2e][gpu]") {
  requireUsable("cuda");
  // Asked for, and left to choose: ranks that share a GPU never get NCCL, which refuses a
  // GPU twice in one communicator (before, every call failed: "Duplicate GPU detected").
  for (const char* choice : {"HOROVOD_GPU_OPERATIONS=cpu", "HOROVOD_GPU_OPERATIONS=auto"}) {
    auto run = runHvdrun({"-np", "4", "--oversubscribe-gpus", kGpuRank, "--expect-backend", "cuda-staged", "--max-mib",
                          "64"},
                         options({choice, "CUDA_VISIBLE_DEVICES=0"}));
    INFO(choice << "\n" << run.out << run.err);
    REQUIRE(run.exitCode == 0);
    for (int r = 0; r < 4; ++r) {
      CHECK(run.out.find("gpu_rank: rank " + std::to_string(r) + " ok (backend cuda-staged") != std::string::npos);
    }
  }
}

TEST_CASE("two ranks holding one GPU fail at start with a table of who holds which GPU", "[e2e][gpu]") {
  requireUsable("cuda");
  // CUDA_VISIBLE_DEVICES=0 for hvdrun itself: its plan sees one GPU for two ranks and
  // refuses before any rank starts (seen on an H100, 2026-11-26).
  auto planned = runHvdrun({"-np", "2", kGpuRank}, options({"CUDA_VISIBLE_DEVICES=0"}));
  INFO(planned.out << planned.err);
  CHECK(planned.exitCode == 2);
  CHECK(planned.err.find("offers 1 GPU(s) but its 2 rank(s) need 2") != std::string::npos);
  // With --no-gpu hvdrun pins nothing, both ranks inherit GPU 0, and init's check finds it.
  auto run = runHvdrun({"-np", "2", "--no-gpu", kGpuRank}, options({"CUDA_VISIBLE_DEVICES=0"}));
  INFO(run.out << run.err);
  std::string all = run.out + run.err;
  CHECK(run.exitCode != 0);
  CHECK(all.find("the job's GPUs are not one per rank: ranks 0, 1 share GPU-") != std::string::npos);
  CHECK(all.find("rank  host") != std::string::npos);  // the table, once, from rank 0
  CHECK(all.find("rank 0 prints the table") != std::string::npos);
  CHECK(all.find("--oversubscribe-gpus") != std::string::npos);
  CHECK(all.find("ok (backend") == std::string::npos);
}

TEST_CASE("the check-build report shows CUDA and NCCL as available where a GPU answers", "[e2e][gpu]") {
  requireUsable("nccl");
  auto run = runHvdrun({"--check-build", "-v"}, options());
  INFO(run.out);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("    [X] CUDA: built with CUDA ") != std::string::npos);
  CHECK(run.out.find("    [X] NCCL: built with NCCL ") != std::string::npos);
}

TEST_CASE("hvdrun that counts the GPUs itself sees its ranks end and exits at once", "[e2e][gpu]") {
  requireUsable("nccl");
  // Without CUDA_VISIBLE_DEVICES hvdrun loads the driver to count the GPUs, and the driver's
  // thread took the SIGCHLD that hvdrun waits for on a signalfd: every job on a GPU machine
  // hung after its ranks had ended (seen on an H200, 2026-11-27, until the timeout).
  auto started = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "1", kGpuRank, "--expect-backend", "nccl", "--max-mib", "1"},
                       options({"CUDA_VISIBLE_DEVICES"}));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("gpu_rank: rank 0 ok (backend nccl") != std::string::npos);
  CHECK(took < 60);
}

TEST_CASE("ranks sharing a GPU are told once that it time-slices them without MPS, and not under MPS", "[e2e][gpu]") {
  requireUsable("cuda");
  // An empty pipe directory of our own: no MPS server answers there, whatever the machine runs.
  hvd::test::TempDir none;
  const std::vector<std::string> args{
      "-np", "2", "--oversubscribe-gpus", kGpuRank, "--expect-backend", "cuda-staged", "--max-mib", "1"};
  auto run = runHvdrun(args, options({"CUDA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=" + none.path()}));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  std::string all = run.out + run.err;
  size_t at = all.find("ranks 0, 1 share GPU-");
  REQUIRE(at != std::string::npos);
  CHECK(all.find("without MPS", at) != std::string::npos);
  CHECK(all.find("nvidia-cuda-mps-control -d") != std::string::npos);
  CHECK(all.find("ranks 0, 1 share GPU-", at + 1) == std::string::npos);  // rank 0 alone says it
  if (std::system("command -v nvidia-cuda-mps-control >/dev/null 2>&1") != 0) {
    hvd::test::skipTest("no nvidia-cuda-mps-control here: the run under MPS is not made");
  }
  // A server of our own, on its own pipe directory, stopped however the test ends.
  hvd::test::TempDir pipes, logs;
  const std::string dirs = "CUDA_MPS_PIPE_DIRECTORY=" + pipes.path() + " CUDA_MPS_LOG_DIRECTORY=" + logs.path();
  REQUIRE(std::system((dirs + " nvidia-cuda-mps-control -d").c_str()) == 0);
  struct Stop {
    std::string dirs;
    ~Stop() { (void)std::system(("echo quit | " + dirs + " nvidia-cuda-mps-control").c_str()); }
  } stop{dirs};
  auto shared = runHvdrun(args, options({"CUDA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=" + pipes.path(),
                                         "CUDA_MPS_LOG_DIRECTORY=" + logs.path()}));
  INFO(shared.out << shared.err);
  REQUIRE(shared.exitCode == 0);
  CHECK((shared.out + shared.err).find("without MPS") == std::string::npos);
  CHECK(shared.out.find("gpu_rank: rank 1 ok (backend cuda-staged") != std::string::npos);
}
