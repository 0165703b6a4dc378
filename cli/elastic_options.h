// cli/elastic_options.h: what an elastic job's options ask of the launch, checked before
// anything starts: by hvdrun itself (app.cc, which checks the rank counts too) and by
// hvdrun sbatch, whose job script's hvdrun runs on the Slurm allocation, so that a job is
// refused at once instead of when it starts.
#pragma once

#include "cli/options.h"

namespace hvd::cli {

// UserError (exit 2) for elastic options without --min-np, a host discovery script where
// hvdrun does not start the ranks itself (onSlurm: srun does; --mpi: mpirun does), and
// --min-np under mpirun.
void checkElasticLaunch(const Options& o, bool onSlurm);

}  // namespace hvd::cli
