// runtime/common/json_stream.h: the elements of a file's JSON array one at a time, for
// files too large to hold parsed: a merged Chrome trace is every rank's events (up to
// --timeline-max-mb each), and its parsed tree takes about twenty times the file's size.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "runtime/common/json.h"
#include "runtime/common/status.h"

namespace hvd {

// Calls `each` with every element of the JSON array that is the file at `path`, in order,
// holding one element (at most `maxElementBytes` of text) at a time. The file is opened as
// openRegularFile does (a pipe, a device or a directory refused). kInvalidArgument "offset
// N: what" where the file is not one array; an element that is not JSON names its own
// offset and the offset within it. `each`'s error ends the walk and is returned as it is.
Status forEachArrayElement(const std::string& path, const std::function<Status(Json)>& each,
                           size_t maxElementBytes = size_t{64} << 20);

}  // namespace hvd
