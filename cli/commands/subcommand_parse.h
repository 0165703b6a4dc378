// cli/commands/subcommand_parse.h: how every `hvdrun <subcommand>` reads its arguments with
// CLI11: --help prints the subcommand's help, anything malformed is a usage error that
// names the subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/user_error.h"

namespace hvd::cli {

// False when --help was asked for (and printed): the caller returns 0. Throws
// UserError(kUsage) "<name>: <CLI11's message>" with the hint otherwise.
inline bool parseSubcommand(CLI::App& app, const std::vector<std::string>& args, const std::string& name,
                            const std::string& hint) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return false;
  } catch (const CLI::ParseError& e) {
    throw UserError(ExitCode::kUsage, name + ": " + e.what(), hint);
  }
  return true;
}

}  // namespace hvd::cli
