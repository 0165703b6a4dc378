// cli/job/timelines.cc: the merges.
#include "cli/job/timelines.h"

#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "cli/os/console.h"
#include "runtime/timeline/trace_files.h"

namespace hvd::cli {

void mergeTimeline(const std::string& path, int ranks) {
  std::vector<std::string> traces = timeline::existingRankTraces(path, ranks);
  if (traces.empty()) {
    printTo(stderr, "hvdrun: warning: no rank wrote a timeline to {} (did the program call hvd::init()?)\n", path);
    return;
  }
  if (Status s = timeline::mergeTraces(traces, path); !s.isOk()) {
    printTo(stderr, "hvdrun: warning: the ranks' timelines stay in separate files: {}\n", s.message());
    return;
  }
  for (size_t i = 1; i < traces.size(); ++i) std::remove(traces[i].c_str());
}

// The next start's ranks would write the same files again: lost, and with them the failure
// they show.
void keepStartTimeline(const std::string& path, int ranks, int start, int starts, std::string& summaries) {
  std::vector<std::string> traces = timeline::existingRankTraces(path, ranks);
  if (traces.empty()) return;
  const std::string kept = timeline::attemptTracePath(path, start);
  if (Status s = timeline::mergeTraces(traces, kept); !s.isOk()) {
    printTo(stderr, "hvdrun: warning: the timeline of start {} of {} is lost to the next start: {}\n", start + 1,
            starts, s.message());
    return;
  }
  for (const std::string& trace : traces) std::remove(trace.c_str());
  std::string line = fmt::format("hvdrun: the timeline of start {} of {} is in {}\n", start + 1, starts, kept);
  printTo(stderr, "{}", line);
  summaries += line;
}

}  // namespace hvd::cli
