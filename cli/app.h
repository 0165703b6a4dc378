// cli/app.h: hvdrun's entry point below main(). Returns the exit code; reports user
// errors by throwing UserError, which main() alone turns into text.
#pragma once

#include "cli/exit_code.h"

namespace hvd::cli {

int run(int argc, char** argv);

}  // namespace hvd::cli
