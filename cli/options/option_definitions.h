// cli/options/option_definitions.h: hvdrun's options as CLI11 knows them, with the text
// values that are checked after it has read them, their other launchers' spellings (-np,
// -cb, --ntasks, ...), which of them a config file may set or a job script passes on, and
// the help. Inside the options room only: parseOptions is the way in from outside.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <span>
#include <string>
#include <vector>

#include "cli/options/options.h"

namespace hvd::cli {

struct Alias {
  const char* shortForm;
  const char* longForm;
};
// horovodrun's single-dash spellings, then mpirun's, srun's and torchrun's (their meanings
// here are theirs: all ranks, the hosts, ranks per host).
std::span<const Alias> optionAliases();

// Text values of options that need checking after CLI11 has read them.
struct RawValues {
  std::string numProc, nprocPerNode, nnodes, killGrace, gpusPerRank, tfPs, tfPortBase, rank, ranksFilter, startTimeout;
  std::string maxRestarts;
  std::string minNp, resetLimit, maxNp, slotsPerHost, elasticTimeout;
  std::vector<std::string> cooldownRange;  // --blacklist-cooldown-range MIN MAX
  std::string signal, preemptGrace, nodes, ntasksPerNode, gpusPerNode, cpusPerTask;
  std::string fusionThresholdMb, cycleTimeMs, cacheCapacity, stallWarning, stallShutdown, logLevel;
  std::string srunArgs;
  std::string timelineFilename, timelineMaxMb, sshPort, maxLineKb, bindTo, stdinTarget;
  std::vector<std::string> exports;  // -x NAME[=VALUE], as given
  bool noPrefix = false, noStallCheck = false, timelineMarkCycles = false;
  std::string mpiArgs, glooTimeout;  // horovodrun's --mpi-args and --gloo-timeout-seconds
  bool gloo = false;
  std::string ignoredValue;  // what horovodrun's flags without a counterpart were given
};

void defineOptions(CLI::App& app, Options& o, RawValues& raw);
extern const char* const kDescription;

// Options only `hvdrun sbatch` reads; keys no config file holds; settings that never go on a
// job script's launch line.
const std::set<std::string>& sbatchOnlyKeys();
const std::set<std::string>& notSettingKeys();
const std::set<std::string>& notForJobKeys();

// The engine options as the variables the ranks' runtime reads, checked here so that a typo
// fails before any rank starts.
std::vector<std::string> runtimeVariables(const RawValues& raw);

std::vector<std::string> knownOptionNames(const CLI::App& app);
// UserError naming the option: another launcher's flag with its reason, or the closest of
// hvdrun's own.
[[noreturn]] void unknownOption(const CLI::App& app, const std::string& token);
// CLI11's help, with the spellings users know (-np, -cb) in the option column.
std::string tidyHelp(std::string help);

}  // namespace hvd::cli
