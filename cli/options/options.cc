// cli/options/options.cc: the command line and the settings below it into Options: options
// split from the program, layers merged under the command line, CLI11's parse, and the values
// checked (option_values.h).
#include "cli/options/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "cli/options/foreign_flags.h"
#include "cli/options/option_definitions.h"
#include "cli/options/option_values.h"
#include "cli/options/srun_args.h"
#include "cli/user_error.h"
#include "runtime/common/ascii_case.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

using rank_contract::assignment;

// "--num-proc" -> "num-proc": the option's first long name, the key config files use.
std::string canonicalKey(const CLI::Option& opt) {
  return opt.get_lnames().empty() ? opt.get_snames().front() : opt.get_lnames().front();
}

// The options on a command line, in order, each with its value tokens; stops at the
// program. Aliases (-np) are rewritten to long forms.
struct CommandLine {
  std::vector<std::pair<std::string, std::vector<std::string>>> options;  // key, tokens
  std::vector<std::string> rest;  // the program and its arguments, "--" included
};

// Where the program starts: "--", a word that is not an option, or "-" (stdin).
bool startsProgram(const std::string& arg) { return arg == "--" || arg.empty() || arg[0] != '-' || arg == "-"; }

// An option's CLI11 name: "-np" is "--num-proc".
std::string canonicalName(std::string name) {
  for (const Alias& a : optionAliases()) {
    if (name == a.shortForm) name = a.longForm;
  }
  return name;
}

// Whether `arg` (named `name`) takes its value from the next token, which may start with '-'.
bool takesNextToken(const CLI::App& app, const std::string& name, const std::string& arg) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt != nullptr && opt->get_expected_min() > 0 && arg.find('=') == std::string::npos;
}

// An option that takes a value given an empty one ("--timeline-filename=$UNSET"): CLI11
// then took the next token as its value, so "--timeline-filename= -np 2 ./train" failed
// saying -np was missing. `next`: the token after arg, if any.
void refuseEmptyValue(const CLI::App& app, const std::string& name, const std::string& arg, const std::string* next) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  if (opt == nullptr || opt->get_expected_min() == 0) return;
  const size_t eq = arg.find('=');
  const bool empty = eq != std::string::npos ? eq + 1 == arg.size() : next != nullptr && next->empty();
  if (!empty) return;
  throw UserError(ExitCode::kUsage, name + " was given an empty value",
                  "give it one, or leave the option out (an unset shell variable, as in " + name + "=$UNSET, is empty)");
}

CommandLine splitCommandLine(const CLI::App& app, const std::vector<std::string>& args) {
  CommandLine line;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (startsProgram(arg)) {
      line.rest.assign(args.begin() + static_cast<long>(i), args.end());
      break;
    }
    std::string name = canonicalName(arg.substr(0, arg.find('=')));
    refuseEmptyValue(app, name, arg, i + 1 < args.size() ? &args[i + 1] : nullptr);
    std::vector<std::string> tokens{name + (arg.find('=') != std::string::npos ? arg.substr(arg.find('=')) : "")};
    if (takesNextToken(app, name, arg)) {
      // Most take one; --blacklist-cooldown-range MIN MAX two.
      const int values = std::max(app.get_option_no_throw(name)->get_expected_min(), 1);
      for (int v = 0; v < values && i + 1 < args.size(); ++v) tokens.push_back(args[++i]);
    }
    const CLI::Option* opt = app.get_option_no_throw(name);
    line.options.emplace_back(opt != nullptr ? canonicalKey(*opt) : name, std::move(tokens));
  }
  return line;
}

// A layer's value as command-line tokens.
std::vector<std::string> tokensFor(const SettingKey& key, const std::vector<std::string>& values) {
  std::vector<std::string> tokens;
  if (key.kind == SettingKind::kFlag) {
    tokens.push_back("--" + key.key + "=" + (values.empty() ? "true" : values.back()));
    return tokens;
  }
  for (const std::string& v : values) tokens.push_back("--" + key.key + "=" + v);
  return tokens;
}

}  // namespace

std::vector<SettingKey> settingKeys() {
  CLI::App app;
  Options o;
  RawValues raw;
  defineOptions(app, o, raw);
  std::vector<SettingKey> keys;
  for (const CLI::Option* opt : app.get_options()) {
    std::string key = canonicalKey(*opt);
    if (notSettingKeys().count(key) != 0) continue;
    SettingKind kind = opt->get_expected_min() == 0 ? SettingKind::kFlag
                       : opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll ? SettingKind::kList
                                                                                            : SettingKind::kValue;
    std::vector<std::string> others;
    for (const std::string& l : opt->get_lnames()) {
      if (l != key) others.push_back(l);
    }
    for (const std::string& sname : opt->get_snames()) {
      if (sname != key) others.push_back(sname);
    }
    for (const Alias& a : optionAliases()) {
      const std::string_view spelling = a.shortForm;
      if (a.longForm == "--" + key) others.emplace_back(spelling.substr(spelling.find_first_not_of('-')));
    }
    keys.push_back({key, kind, sbatchOnlyKeys().count(key) != 0, std::move(others)});
  }
  return keys;
}

void takeSbatchOptionsInLaunch(Options& o) {
  if (o.givenOnCommandLine.count("ntasks-per-node") != 0) {
    if (o.numProc > 0) {
      throw UserError(ExitCode::kUsage, "-np and --ntasks-per-node both say how many ranks: give one of them",
                      "-np N starts N ranks in all; --ntasks-per-node K (as --nproc-per-node K) starts K on every host");
    }
    if (o.ranksPerHost > 0) {
      throw UserError(ExitCode::kUsage,
                      "--ntasks-per-node and --nproc-per-node both say how many ranks each host gets: give one of them",
                      "they mean the same here (srun's and torchrun's names)");
    }
    o.ranksPerHost = o.sbatch.ntasksPerNode;
  }
  // What the job script holds besides its #SBATCH lines: the set-up before the launch.
  static const std::set<std::string> kScriptKeys = {"submit", "template", "modules", "env", "venv", "setup"};
  for (const std::string& key : sbatchOnlyKeys()) {
    if (key == "ntasks-per-node" || o.givenOnCommandLine.count(key) == 0) continue;
    const std::string what = kScriptKeys.count(key) != 0
                                 ? "it shapes the job script hvdrun sbatch writes, and a launch writes none"
                                 : "it shapes the allocation a job script asks Slurm for, and a launch asks for none";
    std::string hint = "to submit a job: hvdrun sbatch --submit" + (key == "submit" ? "" : " --" + key + " ...") +
                       " -np N program; to run here, leave it out";
    if (key == "nodes") hint += "; --nnodes N checks how many hosts a launch has";
    if (key == "env") hint += "; -x NAME=VALUE sets a variable for the ranks";
    if (key == "modules") hint += "; torchrun's --module (run a Python module) is: hvdrun [options] python -m MODULE";
    throw UserError(ExitCode::kUsage,
                    "--" + key + " is for hvdrun sbatch: " + what +
                        " (it runs on this machine, the -H or --hostfile hosts, or the Slurm allocation it is in)",
                    hint);
  }
}

std::vector<std::string> withSbatchShortOptions(const std::vector<std::string>& args) {
  static constexpr std::pair<char, const char*> kSbatchShort[] = {
      {'N', "--nodes"},   {'t', "--time"},          {'p', "--partition"}, {'A', "--account"},    {'q', "--qos"},
      {'C', "--constraint"}, {'c', "--cpus-per-task"}, {'J', "--job-name"}, {'o', "--job-output"}, {'e', "--job-error"}};
  auto longFor = [](const std::string& arg) -> const char* {
    if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') return nullptr;
    for (const auto& [letter, name] : kSbatchShort) {
      if (arg[1] == letter) return name;
    }
    return nullptr;
  };
  CLI::App app;
  Options o;
  RawValues raw;
  defineOptions(app, o, raw);
  const std::vector<std::string> known = knownOptionNames(app);
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (startsProgram(arg)) {  // the program and what follows
      out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    std::string name = arg.substr(0, arg.find('='));
    const char* sbatchName = longFor(arg);
    // "-p" and the other letters exactly, or with the value attached ("-N4"); hvdrun's own
    // spellings that start with one of those letters (-cb) stay theirs.
    bool exact = sbatchName != nullptr && arg.size() == 2;
    bool attached = sbatchName != nullptr && arg.size() > 2 && std::find(known.begin(), known.end(), name) == known.end();
    if (exact) {
      out.emplace_back(sbatchName);
      if (i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    if (attached) {
      out.push_back(std::string(sbatchName) + "=" + arg.substr(arg[2] == '=' ? 3 : 2));
      continue;
    }
    out.push_back(arg);
    if (takesNextToken(app, canonicalName(name), arg) && i + 1 < args.size()) out.push_back(args[++i]);
  }
  return out;
}

Options parseOptions(const std::vector<std::string>& args, const std::vector<SettingLayer>& layers) {
  // `horovodrun -v` alone prints its version; hvdrun's -v is --verbose (hvdrun -cb -v), which
  // alone would be a usage error, so alone it is the version here too.
  if (args == std::vector<std::string>{"-v"}) return parseOptions({"--version"}, layers);
  Options o;
  RawValues raw;
  CLI::App app{kDescription, "hvdrun"};
  defineOptions(app, o, raw);

  CommandLine line = splitCommandLine(app, args);
  for (const auto& [key, tokens] : line.options) o.givenOnCommandLine.insert(key);
  // Each key from the highest layer that has it, unless the command line does.
  std::map<std::string, std::vector<std::string>> chosen;
  std::map<std::string, std::string> chosenFrom;  // key -> the layer's origin, for messages
  for (const SettingLayer& layer : layers) {
    for (const auto& [key, values] : layer.values) {
      if (o.givenOnCommandLine.count(key) == 0) chosen[key] = values, chosenFrom[key] = layer.origin;
    }
  }
  std::vector<std::string> merged;
  std::vector<std::string> launch;
  const std::vector<SettingKey> keys = chosen.empty() ? std::vector<SettingKey>{} : settingKeys();
  for (const SettingKey& key : keys) {
    auto it = chosen.find(key.key);
    if (it == chosen.end()) continue;
    if (key.kind != SettingKind::kFlag &&
        std::any_of(it->second.begin(), it->second.end(), [](const std::string& v) { return v.empty(); })) {
      throw UserError(ExitCode::kUsage, chosenFrom[key.key] + ": '" + key.key + "' is empty",
                      "give it a value, or leave it out");
    }
    std::vector<std::string> tokens = tokensFor(key, it->second);
    merged.insert(merged.end(), tokens.begin(), tokens.end());
    if (!key.sbatchOnly && notForJobKeys().count(key.key) == 0) launch.insert(launch.end(), tokens.begin(), tokens.end());
  }
  for (const auto& [key, tokens] : line.options) {
    merged.insert(merged.end(), tokens.begin(), tokens.end());
    if (sbatchOnlyKeys().count(key) == 0 && notSettingKeys().count(key) == 0 && notForJobKeys().count(key) == 0) {
      launch.insert(launch.end(), tokens.begin(), tokens.end());
    }
  }
  merged.insert(merged.end(), line.rest.begin(), line.rest.end());

  std::vector<std::string> reversed(merged.rbegin(), merged.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    throw UserError(ExitCode::kUsage, what.empty() ? "cannot parse the command line" : what, kUsageHint);
  }
  o.helpText = tidyHelp(app.help());
  o.program = app.remaining();
  if (!o.program.empty() && o.program.front() == "--") o.program.erase(o.program.begin());
  if (!o.program.empty() && !o.program.front().empty() && o.program.front()[0] == '-' &&
      !(args.size() >= o.program.size() + 1 && args[args.size() - o.program.size() - 1] == "--")) {
    unknownOption(app, o.program.front());
  }
  o.launchArgs = std::move(launch);
  for (const HorovodrunFlag& f : ignoredForeignFlags()) {
    if (app.get_option(f.name)->count() > 0) {
      o.notes.push_back(std::string(f.name) + " (" + f.whose + "'s) changes nothing here: " + f.note);
    }
  }
  if (raw.gloo && o.useMpi) {
    throw UserError(ExitCode::kUsage, "--gloo and --mpi ask for two launches",
                    "leave out --gloo (hvdrun starts ranks without MPI unless --mpi is given)");
  }
  if (!raw.mpiArgs.empty()) {
    if (!o.useMpi) {
      throw UserError(ExitCode::kUsage, "--mpi-args '" + raw.mpiArgs + "' is for mpirun, which runs only with --mpi",
                      "add --mpi, or leave out --mpi-args");
    }
    std::istringstream words(raw.mpiArgs);
    for (std::string w; words >> w;) o.mpiArgs.push_back(w);
  }
  if (!raw.srunArgs.empty()) {
    if (o.useMpi) {
      throw UserError(ExitCode::kUsage,
                      "--srun-args '" + raw.srunArgs + "' is for srun, and --mpi launches through mpirun",
                      "give mpirun's options with --mpi-args, or leave out --mpi");
    }
    o.srunArgs = valueOrThrow(parseSrunArgs(raw.srunArgs));
  }
  if (o.networkInterface.find(',') != std::string::npos) {
    throw UserError(ExitCode::kUsage,
                    "--network-interface (or --nics, --network-interfaces) '" + o.networkInterface +
                        "' names more than one interface",
                    "hvd's ring uses one interface between hosts: give one of them");
  }
  o.prefixOutput = !raw.noPrefix;
  if (!raw.ranksFilter.empty()) o.ranksFilter = parseRankList("--ranks-filter", raw.ranksFilter);
  // Far above any machine yet, and below what a plan can hold in memory in seconds: a typo
  // such as -np 2147483647 is an error, not an allocation failure or a fork bomb.
  if (!raw.numProc.empty()) {
    o.numProc = parsePositiveInt("-np", raw.numProc);
    if (o.numProc > kMaxRanks) {
      throw UserError(ExitCode::kUsage,
                      "-np " + raw.numProc + " is more ranks than hvdrun starts (at most " + std::to_string(kMaxRanks) + ")",
                      "check the number; hvdrun plans jobs of up to " + std::to_string(kMaxRanks) + " ranks");
    }
  }
  if (!raw.nprocPerNode.empty()) {
    const std::string word = asciiLower(raw.nprocPerNode);
    if (word == "gpu" || word == "cpu" || word == "auto") {
      o.ranksPerHostWord = word;  // counted where the plan knows the hosts (plan_builder.cc)
      // A rank per CPU is a CPU job: its GPUs left alone, as torchrun leaves them.
      if (word == "cpu") o.noGpu = true;
    } else if (word.find_first_not_of("0123456789") != std::string::npos || word.empty()) {
      throw UserError(ExitCode::kUsage,
                      "--nproc-per-node expects a whole number from 1 to " + std::to_string(kMaxRanks) +
                          ", or gpu, cpu or auto (torchrun's), got '" + raw.nprocPerNode + "'",
                      kUsageHint);
    } else {
      o.ranksPerHost = parseIntIn("--nproc-per-node", raw.nprocPerNode, 1, kMaxRanks);
    }
    if (o.numProc > 0) {
      throw UserError(ExitCode::kUsage, "-np and --nproc-per-node both say how many ranks: give one of them",
                      "-np N starts N ranks in all; --nproc-per-node K starts K on every host");
    }
  }
  if (!raw.nnodes.empty()) {
    // torchrun's N, or MIN:MAX; an elastic range is not a count of hosts.
    const size_t colon = raw.nnodes.find(':');
    const std::string low = raw.nnodes.substr(0, colon);
    if (low.empty() || low.find_first_not_of("0123456789") != std::string::npos) {
      throw UserError(ExitCode::kUsage, "--nnodes expects N or N:N hosts, got '" + raw.nnodes + "'", kUsageHint);
    }
    const int nodes = parseIntIn("--nnodes", low, 1, kMaxRanks);
    if (colon != std::string::npos && raw.nnodes.substr(colon + 1) != low) {
      throw UserError(ExitCode::kUsage,
                      "--nnodes " + raw.nnodes +
                          " asks for an elastic range of hosts, which hvdrun takes as --min-np and a discovery script",
                      "give the job's host count (--nnodes N), and --min-np and --host-discovery-script for an elastic "
                      "job (docs/hvdrun.md, \"Elastic jobs\")");
    }
    o.nnodes = nodes;
  }
  if (!raw.killGrace.empty()) o.killGrace = parseSeconds("--kill-grace", raw.killGrace);
  if (!raw.bindTo.empty()) {
    auto bind = parseBindTo(raw.bindTo);
    if (!bind) throw UserError(ExitCode::kUsage, bind.status().message(), bind.status().hint());
    o.bindTo = *bind;
    if (o.bindTo != BindTo::kNone && srunArgsBindCpus(o.srunArgs)) {
      throw UserError(ExitCode::kUsage, "--bind-to " + raw.bindTo + " and --srun-args' --cpu-bind both bind the ranks",
                      "give one of them: --bind-to (hvdrun's, under every launcher) or srun's --cpu-bind");
    }
  }
  if (!raw.maxLineKb.empty()) o.maxLineBytes = size_t{1024} * parseIntIn("--max-line-kb", raw.maxLineKb, 1, 1 << 20);
  if (!raw.stdinTarget.empty()) parseStdinTarget(raw.stdinTarget, o);
  if (!raw.startTimeout.empty()) o.startTimeout = parseSeconds("--start-timeout", raw.startTimeout);
  if (!raw.maxRestarts.empty()) o.maxRestarts = parseIntIn("--max-restarts", raw.maxRestarts, 0, 10000);
  if (!raw.minNp.empty()) o.minNp = parseIntIn("--min-np", raw.minNp, 1, 1 << 24);
  if (!raw.maxNp.empty()) o.maxNp = parseIntIn("--max-np", raw.maxNp, 1, 1 << 24);
  if (!raw.slotsPerHost.empty()) o.slotsPerHost = parseIntIn("--slots-per-host", raw.slotsPerHost, 1, 4096);
  if (!raw.resetLimit.empty()) o.resetLimit = parseIntIn("--reset-limit", raw.resetLimit, 0, 1 << 24);
  if (!raw.elasticTimeout.empty()) o.elasticTimeout = parseIntIn("--elastic-timeout", raw.elasticTimeout, 1, 86400);
  if (raw.cooldownRange.size() == 2) {
    o.cooldownMin = parseIntIn("--blacklist-cooldown-range", raw.cooldownRange[0], 1, 86400);
    o.cooldownMax = parseIntIn("--blacklist-cooldown-range", raw.cooldownRange[1], o.cooldownMin, 86400);
  }
  if (!raw.preemptGrace.empty()) o.preemptGrace = parseSeconds("--preempt-grace", raw.preemptGrace);
  if (!raw.gpusPerRank.empty()) o.gpusPerRank = parseIntIn("--gpus-per-rank", raw.gpusPerRank, 1, 64);
  if (!raw.tfPs.empty()) o.tfPs = parseIntIn("--tf-ps", raw.tfPs, 0, 1 << 20);
  if (!raw.sshPort.empty()) o.sshPort = parseIntIn("--ssh-port", raw.sshPort, 1, 65535);
  if (!raw.tfPortBase.empty()) o.tfPortBase = parseIntIn("--tf-port-base", raw.tfPortBase, 1, 65535);
  if (!raw.rank.empty()) o.rank = parseIntIn("--rank", raw.rank, 0, 1 << 24);
  if (!raw.nodes.empty()) o.sbatch.nodes = parseIntIn("--nodes", raw.nodes, 1, 1 << 20);
  if (!raw.ntasksPerNode.empty()) o.sbatch.ntasksPerNode = parseIntIn("--ntasks-per-node", raw.ntasksPerNode, 1, 4096);
  if (!raw.gpusPerNode.empty()) o.sbatch.gpusPerNode = parseIntIn("--gpus-per-node", raw.gpusPerNode, 0, 1024);
  if (!raw.cpusPerTask.empty()) o.sbatch.cpusPerTask = parseIntIn("--cpus-per-task", raw.cpusPerTask, 1, 4096);
  if (!raw.signal.empty()) parsePreemptSignal(raw.signal, o);
  o.runtimeVariables = runtimeVariables(raw);
  o.exportedVariables = exportedVariables(raw.exports, o.runtimeVariables);
  o.runtimeVariables.insert(o.runtimeVariables.end(), o.exportedVariables.begin(), o.exportedVariables.end());
  // The ranks' start-up check must allow what the plan allowed.
  if (o.oversubscribeGpus) o.runtimeVariables.push_back(assignment(rank_contract::kOversubscribeGpus, "1"));
  for (const std::string& kv : o.runtimeVariables) {
    if (rank_contract::assigns(kv, rank_contract::kTimeline)) o.timelineFile = kv.substr(rank_contract::kTimeline.size() + 1);
  }
  return o;
}

}  // namespace hvd::cli
