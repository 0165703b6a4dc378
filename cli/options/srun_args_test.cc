// cli/options/srun_args_test.cc: --srun-args' words, the options hvdrun keeps, and how an
// --export reaches srun's line.
#include <catch2/catch.hpp>

#include "cli/launch/srun_launcher.h"
#include "cli/options/srun_args.h"

using namespace hvd::cli;

TEST_CASE("srun's options pass through --srun-args as words, containers and GPU binding among them", "[unit][options]") {
  auto words = parseSrunArgs("  --container-image=nvcr.io#nvidia/pytorch:24.05-py3 --container-mounts=/data:/data "
                             "--gpu-bind=closest --mpi=pmix_v4 --export=ALL,FOO=1 ");
  REQUIRE(words.isOk());
  CHECK(*words == std::vector<std::string>{"--container-image=nvcr.io#nvidia/pytorch:24.05-py3",
                                           "--container-mounts=/data:/data", "--gpu-bind=closest", "--mpi=pmix_v4",
                                           "--export=ALL,FOO=1"});
  CHECK(srunArgsBindCpus({"--cpu-bind=map_cpu:0,2"}));
  CHECK_FALSE(srunArgsBindCpus(*words));
}

TEST_CASE("the options hvdrun sets on the srun step are refused through --srun-args, each with what to use",
          "[unit][options]") {
  struct Case {
    const char* args;
    const char* message;
    const char* hint;
  };
  for (const Case& c : {
           Case{"--ntasks=4", "--srun-args: --ntasks is hvdrun's to set on the srun step", "-np gives the number of ranks"},
           Case{"-n4", "--srun-args: --ntasks ('-n4') is hvdrun's to set on the srun step", "-np gives the number of ranks"},
           Case{"--gpu-bind=closest --distribution=block", "--srun-args: --distribution is hvdrun's to set on the srun step",
                "hvdrun places every rank itself (SLURM_HOSTFILE, --distribution=arbitrary): docs/plan.md"},
           Case{"--nodelist node[1-2]", "--srun-args: --nodelist is hvdrun's to set on the srun step",
                "run hvdrun in an allocation of those nodes (salloc -w, sbatch -w)"},
           Case{"--ntasks-per-node=2", "--srun-args: --ntasks-per-node is hvdrun's to set on the srun step",
                "--nproc-per-node gives the ranks on every node"},
           Case{"-l", "--srun-args: --label ('-l') is hvdrun's to set on the srun step",
                "hvdrun labels every rank's lines itself"},
       }) {
    INFO(c.args);
    auto words = parseSrunArgs(c.args);
    REQUIRE_FALSE(words.isOk());
    CHECK(words.status().message() == c.message);
    CHECK(words.status().hint() == c.hint);
  }
}

TEST_CASE("an --export without ALL in --srun-args carries hvdrun's variables to the task shim as well", "[unit][options]") {
  const std::vector<std::string> env{"SLURM_HOSTFILE=/tmp/h", "HVD_PLAN_HOSTS=a:2", "HVD_SECRET=s"};
  CHECK(withHvdrunExports({"--export=NONE,FOO=1", "--gpu-bind=closest"}, env) ==
        std::vector<std::string>{"--export=NONE,FOO=1,HVD_PLAN_HOSTS,HVD_SECRET", "--gpu-bind=closest"});
  CHECK(withHvdrunExports({"--export", "PATH"}, env) ==
        std::vector<std::string>{"--export", "PATH,HVD_PLAN_HOSTS,HVD_SECRET"});
  CHECK(withHvdrunExports({"--export=ALL,FOO=1"}, env) == std::vector<std::string>{"--export=ALL,FOO=1"});
}

TEST_CASE("in a container each task runs the hvdrun its mounts put there, else the image's own", "[unit][options]") {
  const std::string here = "/opt/hvd/bin/hvdrun";
  CHECK(shimExecutable({"--gpu-bind=closest"}, here) == here);
  CHECK(shimExecutable({"--container-image=pytorch.sqsh"}, here) == "hvdrun");
  CHECK(shimExecutable({"--container-image=pytorch.sqsh", "--container-mounts=/data:/data,/opt/hvd:/hvd:ro"}, here) ==
        "/hvd/bin/hvdrun");
  CHECK(shimExecutable({"--container-mounts", "/opt/hvd/", "--container-image", "x.sqsh"}, here) == here);
  CHECK(srunTroubleHint({"slurmstepd: error: execve(): hvdrun: No such file or directory"})->find(
            "installed in the image (the hvd package puts hvdrun on its PATH)") != std::string::npos);
}
