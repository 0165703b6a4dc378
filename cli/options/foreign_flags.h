// cli/options/foreign_flags.h: the flags of the launchers users come from (horovodrun,
// torchrun, mpirun, srun) that are not hvdrun's own options or their second names: tuning
// hvdrun has no counterpart for, accepted with a note saying what to use instead; what
// hvdrun does anyway, accepted silently; and the rest, refused saying why and what to do.
#pragma once

#include <span>
#include <string_view>

namespace hvd::cli {

struct HorovodrunFlag {
  const char* name;
  bool takesValue;
  const char* note;                  // why it changes nothing here, and what to use
  const char* whose = "horovodrun";  // the launcher it comes from
};
std::span<const HorovodrunFlag> ignoredForeignFlags();
std::span<const char* const> defaultForeignFlags();

struct RefusedFlag {
  const char* name;
  const char* why;
  const char* hint;
};
// The refusal of `name`, or nullptr when it is not one of them.
const RefusedFlag* refusedForeignFlag(std::string_view name);

}  // namespace hvd::cli
