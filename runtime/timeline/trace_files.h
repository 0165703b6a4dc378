// runtime/timeline/trace_files.h: where each rank's trace goes, and merging them into one.
// Rank 0 writes the file HOROVOD_TIMELINE names, as Horovod does; rank r > 0 writes the
// same name with ".rank<r>" before its extension (trace.json -> trace.rank3.json). Every
// event already carries its rank as pid and rank 0's clock, so a merge only joins arrays.
#pragma once

#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd::timeline {

// A path naming an existing device or pipe (/dev/null) is every rank's own.
std::string rankTracePath(const std::string& path, int rank);

// Where hvdrun --max-restarts keeps the merged trace of a start that failed (0: the first),
// before the next start's ranks write `path` again: trace.json -> trace.attempt0.json
// (torchrun's word for a start).
std::string attemptTracePath(const std::string& path, int start);

// The per-rank files of `path` that exist, rank 0's first, in rank order (gaps allowed).
std::vector<std::string> existingRankTraces(const std::string& path, int maxRanks);

// Writes one trace holding every event of `inputs` (each a trace this writer made, or any
// Chrome trace in the JSON array format) to `output`, through a temporary file renamed in
// place, so `output` may be one of the inputs. kInvalidArgument naming a file that is not
// a JSON array, or an `output` that exists and is not a regular file (a device, a pipe, a
// directory: left as it is); kSystem for I/O.
Status mergeTraces(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace hvd::timeline
