// cli/launch/srun_launcher_test.cc: what hvdrun reads from srun's own messages.
#include "cli/launch/srun_launcher.h"

#include <catch2/catch.hpp>

using hvd::cli::firstSrunFailure;
using hvd::cli::srunTroubleHint;

TEST_CASE("srun's words on a task that failed name its rank and how it ended", "[unit]") {
  auto f = firstSrunFailure({"srun: error: node02: task 2: Exited with exit code 3"});
  REQUIRE(f);
  CHECK(f->rank == 2);
  CHECK(f->host == "node02");
  CHECK(f->exitCode == 3);
  CHECK_FALSE(firstSrunFailure({"srun: Job step aborted"}));
}

TEST_CASE("srun failing for an allocation that ended or a controller that does not answer gets a hint of its own",
          "[unit]") {
  // Seen on the Slurm testbed: a shell left from an ended salloc, and a stopped slurmctld.
  // Both got "srun could not start the job, or lost a node or a daemon on the way".
  auto expired = srunTroubleHint({"srun: error: Slurm job 2 has expired",
                                  "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 2"});
  REQUIRE(expired);
  CHECK(*expired == "the Slurm job in this shell's SLURM_JOB_ID has ended (variables left from an old salloc or "
                    "job?): get a new allocation, or run on this machine alone with --no-slurm");
  auto invalid = srunTroubleHint({"srun: error: Unable to confirm allocation for job 7: Invalid job id specified"});
  REQUIRE(invalid);
  CHECK(invalid->rfind("the Slurm job in this shell's SLURM_JOB_ID has ended", 0) == 0);
  auto silent = srunTroubleHint({"srun: error: Unable to confirm allocation for job 1: Socket timed out on send/recv "
                                 "operation",
                                 "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 1"});
  REQUIRE(silent);
  CHECK(*silent == "the Slurm controller (slurmctld) did not answer srun in time: 'scontrol ping' says whether it "
                   "is up; no rank was started by this step");
  CHECK(srunTroubleHint({"srun: error: Unable to contact slurm controller (connect failure)"}) == silent);
  CHECK_FALSE(srunTroubleHint({"srun: error: Unable to create step for job 3: Requested node configuration is not "
                               "available"}));
}
