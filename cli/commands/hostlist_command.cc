// cli/commands/hostlist_command.cc: option parsing and output for `hvdrun hostlist`.
#include "cli/os/console.h"
#include "cli/commands/hostlist_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <iterator>

#include "cli/commands/subcommand_parse.h"
#include "cli/user_error.h"
#include "slurm/hostlist.h"

namespace hvd::cli {
namespace {

constexpr const char* kHint = "see 'hvdrun hostlist --help'";

std::string readStdin() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  // Lines are one more separator, so `scontrol show hostnames | hvdrun hostlist -c` works.
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ',';
  }
  return text;
}

}  // namespace

int runHostlistCommand(const std::vector<std::string>& args) {
  CLI::App app{"hvdrun hostlist: expand or compress Slurm hostlist expressions, like scontrol show "
               "hostnames/hostlist/hostlistsorted, without Slurm.\n"
               "Usage: hvdrun hostlist [--expand|--compress|--sorted|--count] [EXPRESSION...]\n"
               "Reads the expressions from standard input (lines, commas or spaces) when none is given.",
               "hvdrun hostlist"};
  bool expand = false, compress = false, sorted = false, count = false;
  std::vector<std::string> expressions;
  app.add_flag("-e,--expand", expand, "Print one name per line, in Slurm's order (the default)");
  app.add_flag("-c,--compress", compress, "Print the shortest expression, keeping order and duplicates");
  app.add_flag("-s,--sorted", sorted, "Print the shortest expression of the sorted names");
  app.add_flag("-n,--count", count, "Print the number of names");
  app.add_option("expressions", expressions, "Hostlist expressions, e.g. node[01-04],gpu[1-2]");
  // CLI11 reads an argument that starts with '[' and ends with ']' as a list of its own
  // ("[1-4]" became "1-4", "[01-03,7],n[1-2]" an error), and Slurm's expressions may be
  // just that. A trailing ',' (a separator, so nothing to Slurm's grammar) keeps it whole.
  std::vector<std::string> guarded = args;
  for (std::string& arg : guarded) {
    if (arg.size() >= 2 && arg.front() == '[' && arg.back() == ']') arg += ',';
  }
  if (!parseSubcommand(app, guarded, "hostlist", kHint)) return 0;
  for (std::string& e : expressions) {
    if (e.size() >= 3 && e.front() == '[' && e.ends_with("],")) e.pop_back();  // as typed, for messages
  }
  if (int modes = expand + compress + sorted + count; modes > 1) {
    throw UserError(ExitCode::kUsage, "hostlist: choose one of --expand, --compress, --sorted and --count", kHint);
  }

  std::string text;
  if (expressions.empty() || (expressions.size() == 1 && expressions[0] == "-")) {
    if (expressions.empty() && ::isatty(STDIN_FILENO)) {
      throw UserError(ExitCode::kUsage, "hostlist: no expression given and standard input is a terminal",
                      "e.g. hvdrun hostlist 'node[01-04]', or pipe names in");
    }
    text = readStdin();
  } else {
    for (const auto& e : expressions) text += (text.empty() ? "" : ",") + e;
  }
  std::vector<std::string> names = valueOrThrow(
      slurm::expandHostlist(text), "brackets hold numbers and ranges: node[01-04,07]; text may follow a bracket "
                                   "only when another bracket comes later");
  if (count) {
    printTo(stdout, "{}\n", names.size());
  } else if (compress || sorted) {
    auto out = compress ? slurm::compressHostlist(names) : slurm::compressHostlistSorted(names);
    printTo(stdout, "{}\n", valueOrThrow(std::move(out)));
  } else {
    std::string out;
    out.reserve(names.size() * 12);
    for (const auto& n : names) (out += n) += '\n';
    printTo(stdout, "{}", out);
  }
  return 0;
}

}  // namespace hvd::cli
