// cli/plan/host_spec.h: hosts and slots as users write them: horovodrun's -H list
// ("a:2,b:4", hostlist expressions allowed: "node[01-04]:4") and hostfiles ("host slots=N",
// "host:N", "host"; # comments). Errors quote the offending token and where it stands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/plan/rank_plan.h"
#include "runtime/common/status.h"

namespace hvd::cli {

// "-H a:2,node[01-02]:4,c" -> a:2, node01:4, node02:4, c:1. A host listed twice is an error.
Result<std::vector<HostSlots>> parseHostList(std::string_view text);

// A hostfile's text; `path` names it in messages ("FILE:LINE:COLUMN: ..."). A host on
// several lines has their slots added up (mpirun's and PBS's one line per slot), in the
// order of its first line.
Result<std::vector<HostSlots>> parseHostfile(std::string_view text, std::string_view path);

}  // namespace hvd::cli
