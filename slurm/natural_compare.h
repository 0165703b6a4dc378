// slurm/natural_compare.h: "natural" string order (a2 < a10), the comparison Slurm uses
// to sort and merge host ranges (its strnatcmp). Needed to print exactly what Slurm prints.
#pragma once

#include <string_view>

namespace hvd::slurm {

// <0, 0, >0 like strcmp. Runs of digits compare by value (or, when either run starts
// with '0', digit by digit from the left); whitespace is skipped.
int naturalCompare(std::string_view a, std::string_view b);

}  // namespace hvd::slurm
