// cli/config/horovod_config.h: horovodrun's --config-file, a YAML file of fixed sections
// (controller, params, autotune, timeline, stall_check, library_options, logging), read as
// the hvdrun settings its keys stand for, so a horovodrun command line with its config file
// runs unchanged. Only that shape is read (sections of "key: value" lines, comments, quoted
// or bare scalars); anything else is an error naming the line. What has no counterpart here
// (the autotuner, hierarchical collectives, NCCL streams) is named in a note, as its
// command-line flag is. The settings sit where hvdrun's TOML file would: below the command
// line and HVDRUN_* variables (horovodrun lets its file override the command line).
#pragma once

#include <string>
#include <vector>

#include "cli/options/options.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// By its name (.yaml, .yml) or, whatever its name, by a top-level line opening one of
// horovodrun's sections ("params:", "controller: gloo").
bool isHorovodConfig(const std::string& path, const std::string& text);

struct HorovodConfig {
  SettingLayer layer;
  std::vector<std::string> notes;  // without "hvdrun: note: "
};

// kInvalidArgument as "path:line: what" for a line outside the shape, an unknown section or
// key (with the nearest one), or a value of the wrong kind.
Result<HorovodConfig> horovodConfig(const std::string& path, const std::string& text);

}  // namespace hvd::cli
