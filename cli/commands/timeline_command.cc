// cli/commands/timeline_command.cc: option parsing and output for `hvdrun timeline`.
#include "cli/os/console.h"
#include "cli/commands/timeline_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands/subcommand_parse.h"
#include "cli/user_error.h"
#include "runtime/timeline/trace_files.h"
#include "runtime/timeline/trace_summary.h"

namespace hvd::cli {
namespace {

constexpr const char* kHint = "see 'hvdrun timeline --help'";

}  // namespace

int runTimelineCommand(const std::vector<std::string>& args) {
  CLI::App app{"hvdrun timeline: work with the traces --timeline-filename records (docs/timeline.md).\n"
               "Usage: hvdrun timeline merge -o OUT TRACE...   one trace, a track per rank\n"
               "       hvdrun timeline summary TRACE           a table per tensor",
               "hvdrun timeline"};
  app.require_subcommand(1);
  std::string output;
  std::vector<std::string> inputs;
  std::string summaryInput;
  CLI::App* merge = app.add_subcommand("merge", "Merge per-rank traces (trace.json, trace.rank1.json, ...) into one");
  merge->add_option("-o,--output", output, "The merged trace")->required();
  merge->add_option("traces", inputs, "The traces to merge")->required();
  CLI::App* summary = app.add_subcommand("summary", "Per tensor: operations, bytes, negotiation and operation times, "
                                                    "and the rank that was ready last most often");
  summary->add_option("trace", summaryInput, "A trace (merged, or one rank's)")->required();
  if (!parseSubcommand(app, args, "timeline", kHint)) return 0;
  if (merge->parsed()) {
    if (Status s = timeline::mergeTraces(inputs, output); !s.isOk()) {
      throw UserError(ExitCode::kUsage, "timeline merge: " + s.message(), "give the files --timeline-filename wrote");
    }
    return 0;
  }
  auto rows = timeline::summarizeTraceFile(summaryInput);
  if (!rows) {
    const Status& why = rows.status();
    throw UserError(ExitCode::kUsage, "timeline summary: " + why.message(), why.hint().empty() ? kHint : why.hint());
  }
  if (rows->empty()) {
    printTo(stdout, "no operations in {}\n", summaryInput);
    return 0;
  }
  printTo(stdout, "{}", timeline::formatSummary(*rows));
  return 0;
}

}  // namespace hvd::cli
