// cli/options.h: hvdrun's command line, parsed into plain values. Parsing never touches
// the machine; every malformed input becomes a UserError naming the offending token.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hvd::cli {

struct Options {
  // What to do.
  bool showVersion = false;
  bool checkBuild = false;
  bool verbose = false;
  bool help = false;
  std::string helpText;  // the grouped --help text, filled by parseOptions

  // Launch.
  int numProc = 0;  // 0: not given
  std::vector<std::string> program;  // program and its arguments, verbatim

  bool useMpi = false;  // --mpi: launch through Open MPI's mpirun
  bool pmix = false;    // --pmix: under srun, give MPI programs PMIx (srun --mpi=pmix)

  // Hosts and GPUs.
  std::string hosts;     // -H
  std::string hostfile;  // --hostfile
  bool noSlurm = false;
  int gpusPerRank = 1;
  bool noGpu = false;
  bool oversubscribeGpus = false;
  std::string networkInterface;

  // TensorFlow's TF_CONFIG.
  bool tfConfig = false;
  int tfPs = 0;
  bool tfChief = false;
  bool tfEvaluator = false;
  int tfPortBase = 8888;

  // Showing the plan instead of running it.
  bool dryRun = false;
  std::string format = "table";
  std::optional<int> rank;

  // Output and supervision.
  bool prefixOutput = true;
  std::string outputDir;     // --output-filename
  std::set<int> ranksFilter;  // --ranks-filter; empty: every rank on the console
  bool timestampOutput = false;
  std::chrono::milliseconds killGrace{5000};
  std::chrono::milliseconds startTimeout{30000};
};

// Throws UserError(kUsage) for unknown options, missing or malformed values.
Options parseOptions(const std::vector<std::string>& args);

// Edit distance, for "did you mean ...?" hints.
size_t editDistance(const std::string& a, const std::string& b);

}  // namespace hvd::cli
