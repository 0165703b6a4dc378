// cli/job/preemption.h: the preemption notice (docs/sbatch.md). Slurm sends a signal before
// the time limit (--signal=B:USR2@90 by default); hvdrun raises a flag every rank can see
// (HVD_PREEMPT_FILE) and passes the signal on, and after the job, with --requeue, puts it
// back in the queue.
#pragma once

#include <string>

#include "cli/options/options.h"
#include "cli/supervise/rank_environment.h"
#include "cli/supervise/supervision.h"
#include "slurm/environment.h"

namespace hvd::cli {

// The flag: a file created when the signal arrives. Inside Slurm it lives in the submit
// directory, which the job's nodes share on any cluster where a job script can be submitted
// from it; outside, in a private directory of this machine, made only when the notice comes.
// It is removed when hvdrun ends, so a requeued run starts without it.
class PreemptionFlag {
 public:
  // UserError when no private directory can be made for it.
  PreemptionFlag(const Options& o, const slurm::Environment& env);
  ~PreemptionFlag();
  PreemptionFlag(const PreemptionFlag&) = delete;
  PreemptionFlag& operator=(const PreemptionFlag&) = delete;

  const std::string& path() const { return path_; }
  const std::string& signal() const { return signal_; }  // "USR1" or "USR2"
  int signalNumber() const;
  // Creates the flag (never through a link, never into a file someone else made); a flag
  // that cannot be made is said on stderr, and the ranks still get the signal.
  void raise() const;

 private:
  bool makePrivateDir() const;

  std::string signal_;
  std::string path_;
  std::string privateDir_;       // outside Slurm: made with the flag, removed with it
  mutable bool madeDir_ = false;
};

// After a preempted job: says what happened and, with --requeue, puts the job back in the
// queue (scontrol requeue, which ends this job and this process at once, so it comes last).
// UserError when the requeue fails.
void finishPreemption(const Options& o, const JobOutcome& outcome, bool toldByRanks, const slurm::Environment& env);

}  // namespace hvd::cli
