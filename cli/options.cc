// cli/options.cc: CLI11 set-up. horovodrun's single-dash long options (-np, -cb) are
// rewritten to their long forms first, because CLI11 reads "-np" as "-n -p".
#include "cli/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "cli/user_error.h"

namespace hvd::cli {
namespace {

struct Alias {
  const char* shortForm;
  const char* longForm;
};
constexpr Alias kAliases[] = {{"-np", "--num-proc"}, {"-cb", "--check-build"}};

constexpr const char* kUsageHint = "run 'hvdrun --help' for the options";

int parseIntIn(const std::string& option, const std::string& text, int minimum, int maximum) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < minimum || value > maximum) {
    throw UserError(ExitCode::kUsage,
                    option + " expects a whole number from " + std::to_string(minimum) + " to " +
                        std::to_string(maximum) + ", got '" + text + "'",
                    kUsageHint);
  }
  return value;
}

int parsePositiveInt(const std::string& option, const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw UserError(ExitCode::kUsage, option + " expects a whole number, got '" + text + "'", kUsageHint);
  }
  if (value <= 0) {
    throw UserError(ExitCode::kUsage, option + " must be at least 1, got '" + text + "'", kUsageHint);
  }
  return value;
}

// "0,3-5" -> {0,3,4,5}.
std::set<int> parseRankList(const std::string& option, const std::string& text) {
  std::set<int> ranks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-', 1);
    int lo = parseIntIn(option, item.substr(0, dash), 0, 1 << 24);
    int hi = dash == std::string::npos ? lo : parseIntIn(option, item.substr(dash + 1), 0, 1 << 24);
    if (hi < lo || hi - lo > 1 << 20) {
      throw UserError(ExitCode::kUsage, option + ": '" + item + "' runs downwards or is too long", kUsageHint);
    }
    for (int r = lo; r <= hi; ++r) ranks.insert(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

std::chrono::milliseconds parseSeconds(const std::string& option, const std::string& text) {
  double seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 || seconds > 86400) {
    throw UserError(ExitCode::kUsage, option + " expects seconds between 0 and 86400, got '" + text + "'",
                    kUsageHint);
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

std::vector<std::string> knownOptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  for (const Alias& a : kAliases) names.emplace_back(a.shortForm);
  return names;
}

[[noreturn]] void unknownOption(const CLI::App& app, const std::string& token) {
  std::string name = token.substr(0, token.find('='));
  std::string best;
  size_t bestDistance = 3;  // suggest only close matches
  for (const std::string& known : knownOptionNames(app)) {
    size_t d = editDistance(name, known);
    if (d < bestDistance) bestDistance = d, best = known;
  }
  throw UserError(ExitCode::kUsage, "unknown option '" + name + "'",
                  best.empty() ? kUsageHint : "did you mean '" + best + "'?");
}

// Rewrites aliases among hvdrun's own options; the program's arguments stay untouched.
std::vector<std::string> normalise(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> out;
  bool inProgram = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (inProgram) {
      out.push_back(arg);
      continue;
    }
    if (arg == "--" || arg.empty() || arg[0] != '-' || arg == "-") {
      inProgram = true;
      out.push_back(arg);
      continue;
    }
    std::string name = arg.substr(0, arg.find('='));
    for (const Alias& a : kAliases) {
      if (name == a.shortForm) name = a.longForm;
    }
    std::string rewritten = name + (arg.find('=') != std::string::npos ? arg.substr(arg.find('=')) : "");
    out.push_back(rewritten);
    // An option that takes a value consumes the next token, which may start with '-'.
    const CLI::Option* opt = app.get_option_no_throw(name);
    if (opt != nullptr && opt->get_expected_min() > 0 && arg.find('=') == std::string::npos && i + 1 < args.size()) {
      out.push_back(args[++i]);
    }
  }
  return out;
}

// CLI11's help, with the spellings users know (-np, -cb) in the option column, without
// CLI11's generic second usage line and with single blank lines between groups.
std::string tidyHelp(std::string help) {
  std::istringstream in(help);
  std::string out;
  bool lastBlank = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Usage: hvdrun [OPTIONS]", 0) == 0) continue;
    bool blank = line.empty();
    if (blank && lastBlank) continue;
    lastBlank = blank;
    for (const Alias& a : kAliases) {
      std::string prefix = std::string("  ") + a.longForm + " ";
      if (line.rfind(prefix, 0) != 0 && line != "  " + std::string(a.longForm)) continue;
      size_t descriptionAt = line.find_first_not_of(' ', line.find("  ", 2));
      std::string option = line.substr(2, line.find("  ", 2) - 2);
      std::string widened = "  " + std::string(a.shortForm) + ", " + option;
      size_t column = descriptionAt == std::string::npos ? widened.size() + 2 : std::max(descriptionAt, widened.size() + 2);
      line = widened + std::string(column - widened.size(), ' ') +
             (descriptionAt == std::string::npos ? "" : line.substr(descriptionAt));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

Options parseOptions(const std::vector<std::string>& args) {
  Options o;
  CLI::App app{"hvdrun: start and supervise the ranks of a distributed training job.\n"
               "Usage: hvdrun [options] [--] program [args...]\n"
               "       hvdrun plan [options] [program [args...]]   (same as --dry-run)\n"
               "       hvdrun --check-build [--verbose]\n"
               "       hvdrun hostlist [--expand|--compress|--sorted|--count] [EXPRESSION...]",
               "hvdrun"};
  app.footer("Exit codes: 0 ok, 1 internal error, 2 usage or config error, 3 environment error,\n"
             "124 timeout, 130 interrupted; otherwise the first failing rank's exit code\n"
             "(128+signal when it was killed). The manual: docs/hvdrun.md.");
  app.set_help_flag();  // handled below, so --help can be grouped with the other info options
  app.prefix_command();

  std::string numProc, killGrace, gpusPerRank, tfPs, tfPortBase, rank;
  app.add_option("--num-proc", numProc, "Number of ranks to start (horovodrun's -np); default: every slot")
      ->group("Launch")->type_name("N");
  app.add_flag("--mpi", o.useMpi, "Launch through Open MPI's mpirun (inside or outside Slurm)")->group("Launch");
  app.add_flag("--pmix", o.pmix, "Under srun, start MPI programs with PMIx (srun --mpi=pmix)")->group("Launch");
  app.add_option("-H,--hosts", o.hosts, "Hosts and slots: host:slots,... (hostlists allowed: node[01-04]:4)")
      ->group("Hosts and GPUs")->type_name("LIST");
  app.add_option("--hostfile", o.hostfile, "File of 'host slots=N' or 'host:N' lines")
      ->group("Hosts and GPUs")->type_name("FILE");
  app.add_flag("--no-slurm", o.noSlurm, "Ignore the Slurm allocation (read automatically when SLURM_JOB_ID is set)")
      ->group("Hosts and GPUs");
  app.add_option("--gpus-per-rank", gpusPerRank, "GPUs each rank gets in CUDA_VISIBLE_DEVICES (default 1)")
      ->group("Hosts and GPUs")->type_name("K");
  app.add_flag("--no-gpu", o.noGpu, "Do not set CUDA_VISIBLE_DEVICES")->group("Hosts and GPUs");
  app.add_flag("--oversubscribe-gpus", o.oversubscribeGpus, "Let ranks share GPUs when a host has too few")
      ->group("Hosts and GPUs");
  app.add_option("--network-interface", o.networkInterface, "Interface for traffic between ranks (e.g. ib0)")
      ->group("Hosts and GPUs")->type_name("NAME");
  app.add_flag("--tf-config", o.tfConfig, "Give every rank a TF_CONFIG (MultiWorkerMirroredStrategy by default)")
      ->group("TensorFlow");
  app.add_option("--tf-ps", tfPs, "Parameter servers for ParameterServerStrategy")->group("TensorFlow")->type_name("N");
  app.add_flag("--tf-chief", o.tfChief, "Rank 0 is a separate chief")->group("TensorFlow");
  app.add_flag("--tf-evaluator", o.tfEvaluator, "The last rank is an evaluator, outside the cluster")
      ->group("TensorFlow");
  app.add_option("--tf-port-base", tfPortBase, "TF_CONFIG ports are base + local rank (default 8888)")
      ->group("TensorFlow")->type_name("PORT");
  app.add_flag("--dry-run", o.dryRun, "Print the plan instead of running it (also: hvdrun plan ...)")
      ->group("Plan");
  app.add_option("--format", o.format, "table, json, sh, hostfile, tf_config or mpi (default table)")
      ->group("Plan")->type_name("FORMAT");
  app.add_option("--rank", rank, "The rank --format sh and tf_config print")->group("Plan")->type_name("R");
  bool noPrefix = false;
  std::string ranksFilter;
  app.add_flag("--no-prefix", noPrefix, "Print ranks' output without the [rank]<stdout>: prefix")
      ->group("Output");
  app.add_option("--output-filename", o.outputDir, "Also write DIR/rank.N/stdout and stderr for every rank")
      ->group("Output")->type_name("DIR");
  app.add_option("--ranks-filter", ranksFilter, "Show only these ranks on the console, e.g. 0,3-5 (files get all)")
      ->group("Output")->type_name("LIST");
  app.add_flag("--timestamp-output", o.timestampOutput, "Start every console line with the time")->group("Output");
  std::string startTimeout;
  app.add_option("--start-timeout", startTimeout,
                 "Seconds for every rank to reach the runtime's rendezvous once one has (default 30; 0: off)")
      ->group("Supervision")->type_name("SECONDS");
  app.add_option("--kill-grace", killGrace,
                 "Seconds between SIGTERM and SIGKILL when stopping ranks (default 5)")
      ->group("Supervision")->type_name("SECONDS");
  app.add_flag("--check-build", o.checkBuild,
               "Show which controllers, tensor operations and launchers work here")
      ->group("Information");
  app.add_flag("-v,--verbose", o.verbose, "With --check-build: versions found and the reason for every [ ]")
      ->group("Information");
  app.add_flag("--version", o.showVersion, "Print version, commit, compiler and backends")->group("Information");
  app.add_flag("-h,--help", o.help, "Print this help")->group("Information");

  std::vector<std::string> normalised = normalise(app, args);
  std::vector<std::string> reversed(normalised.rbegin(), normalised.rend());
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
  o.prefixOutput = !noPrefix;
  if (!ranksFilter.empty()) o.ranksFilter = parseRankList("--ranks-filter", ranksFilter);
  if (!numProc.empty()) o.numProc = parsePositiveInt("-np", numProc);
  if (!killGrace.empty()) o.killGrace = parseSeconds("--kill-grace", killGrace);
  if (!startTimeout.empty()) o.startTimeout = parseSeconds("--start-timeout", startTimeout);
  if (!gpusPerRank.empty()) o.gpusPerRank = parseIntIn("--gpus-per-rank", gpusPerRank, 1, 64);
  if (!tfPs.empty()) o.tfPs = parseIntIn("--tf-ps", tfPs, 0, 1 << 20);
  if (!tfPortBase.empty()) o.tfPortBase = parseIntIn("--tf-port-base", tfPortBase, 1, 65535);
  if (!rank.empty()) o.rank = parseIntIn("--rank", rank, 0, 1 << 24);
  return o;
}

}  // namespace hvd::cli
