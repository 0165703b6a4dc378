// cli/job/timelines.h: --timeline-filename. Each rank writes a trace of its own
// (runtime/timeline/trace_files.h); hvdrun merges them into the one file a user opens, with
// a track per rank. A failed merge leaves the per-rank files and says so, without changing
// the job's exit code.
#pragma once

#include <string>

namespace hvd::cli {

// The job's end: the ranks' traces merged into `path`.
void mergeTimeline(const std::string& path, int ranks);

// --max-restarts: the traces of a start that failed, merged aside before the next start's
// ranks write the same files again; the line saying where goes to stderr and to `summaries`.
void keepStartTimeline(const std::string& path, int ranks, int start, int starts, std::string& summaries);

}  // namespace hvd::cli
