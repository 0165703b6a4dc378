// slurm/sbatch_directives.h: what a job needs, turned into the #SBATCH lines of its script.
// Pure: no Slurm command runs. The lines come out sorted, so two scripts for the same
// request are byte-identical and a diff between two requests shows only what changed.
#pragma once

#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::slurm {

struct SbatchRequest {
  std::string jobName;
  int ranks = 0;  // the job's -np; 0: one rank per task the geometry gives
  int nodes = 0, ntasksPerNode = 0, gpusPerNode = 0, cpusPerTask = 0;  // 0: not given
  std::string time, partition, account, qos, constraint, mem;
  std::string output = "%x-%j.out";
  std::string error = "%x-%j.err";
  std::string signal = "USR2";  // sent to the batch shell (B:), which is hvdrun itself
  int signalSeconds = 90;
  bool requeue = false;
  std::vector<std::string> extraArgs;  // --sbatch-arg values, verbatim ("--exclusive")
};

// The geometry the lines ask for: ranks per node is the GPUs per node unless given (one
// rank per GPU), nodes are as many as -np needs. kInvalidUsage when -np does not fit the
// nodes and tasks given; kInvalidArgument names a malformed value (a time sbatch would
// refuse, a newline or a double quote in any value, an extra argument that is not an
// option or repeats one hvdrun writes).
struct SbatchGeometry {
  int nodes = 1;
  int ntasksPerNode = 1;
};
Result<SbatchGeometry> sbatchGeometry(const SbatchRequest& request);
Result<std::vector<std::string>> sbatchDirectives(const SbatchRequest& request);

// sbatch's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED/INFINITE.
bool isSlurmTime(const std::string& text);

}  // namespace hvd::slurm
