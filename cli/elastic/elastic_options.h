// cli/elastic/elastic_options.h: what an elastic job's options ask of the launch, checked before
// anything starts: by hvdrun itself (cli/job, which checks the rank counts too) and by
// hvdrun sbatch, whose job script's hvdrun runs on the Slurm allocation, so that a job is
// refused at once instead of when it starts.
#pragma once

#include "cli/options/options.h"

namespace hvd::cli {

// Who starts a job's ranks: hvdrun (forked here, or by its host agents over ssh), one srun
// step, or Open MPI's mpirun.
enum class RankStarter { kHvdrun, kSrun, kMpirun };

// UserError (exit 2) for elastic options without --min-np, a host discovery script where
// hvdrun does not start the ranks itself (srun or mpirun does), and --min-np under mpirun,
// which ends the job at its first failure.
void checkElasticLaunch(const Options& o, RankStarter starter);

}  // namespace hvd::cli
