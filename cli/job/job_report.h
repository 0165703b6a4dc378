// cli/job/job_report.h: what hvdrun says of a job's end: the root cause (which rank, how it
// ended, its last stderr lines, what torch's @record caught, what else the user should
// look at), or the interrupt, the ranks that never arrived, the console that went away.
// Besides main(), the only place that words "hvdrun: error:". Under --output-filename the
// summary is also kept beside the ranks' files.
#pragma once

#include <optional>
#include <string>

#include "cli/launch/torch_error_file.h"
#include "cli/options/options.h"
#include "cli/supervise/supervision.h"

namespace hvd::cli {

// What hvdrun says of one start's end, empty when there is nothing to say. ranks: the job's.
std::string reportText(const JobOutcome& outcome, int ranks, const std::optional<RecordedError>& recorded);

// The last words on the ranks' output, when some of it is incomplete (an output file or the
// console could not be written to the end), or empty. A job that otherwise succeeded then
// exits 3 (docs/exit-codes.md): it must not look complete.
std::string incompleteOutputText(const JobOutcome& outcome, const std::string& outputDir);

// --output-filename, --ranks-filter, --timestamp-output and --max-line-kb into supervision.
// The directory is made before any rank starts, so a bad path fails the launch (UserError)
// instead of losing output; an earlier job's summary there is removed.
void applyOutputOptions(const Options& o, SupervisorOptions& supervision);

// --output-filename's directory keeps what hvdrun said of the job's end in "summary" beside
// the ranks' files: it is all there is when stderr was closed or went nowhere. A file of the
// user's by that name is left alone (said on stderr).
void keepSummary(const std::string& outputDir, const std::string& text);

}  // namespace hvd::cli
