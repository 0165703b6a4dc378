// cli/plan/thread_defaults.h: how many threads each rank's math libraries may start when
// the user has not said. OpenMP, MKL and OpenBLAS each start a thread per core they see;
// with several ranks on a node that is ranks x cores threads fighting for the cores (4
// DDP ranks on 2 cores ran 5.6x slower). torchrun sets OMP_NUM_THREADS=1 in that case;
// hvdrun gives each rank its share of the cores instead, as Slurm's --cpus-per-task does.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hvd::cli {

// Slurm's --cpus-per-task when given, else the usable CPUs divided among the ranks that
// share them, at least 1.
int defaultThreadsPerRank(int usableCpus, int ranksSharingThem, std::optional<int> cpusPerTask);

// "OMP_NUM_THREADS=N", "MKL_NUM_THREADS=N", "OPENBLAS_NUM_THREADS=N" for each of these the
// user has not set (userSet answers for a name); empty when the user set OMP_NUM_THREADS,
// which the others then follow in every library that reads it.
std::vector<std::string> threadVariables(int threads, const std::function<bool(const std::string&)>& userSet);

// "TF_NUM_INTEROP_THREADS=2" for a rank that may use one CPU, unless the user set it.
// TensorFlow sizes its inter-op pool from the CPUs a process may use, and a
// ParameterServerStrategy worker with a pool of one never runs the chief's first step (np=4
// pinned two to a core on 2 cores, or confined to one CPU, hung; checked 2026-11-25). Two
// threads are what TensorFlow itself takes on one core with SMT.
std::optional<std::string> interOpThreadsVariable(int rankCpus, const std::function<bool(const std::string&)>& userSet);

}  // namespace hvd::cli
