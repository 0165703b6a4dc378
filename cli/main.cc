// cli/main.cc: the one place errors become text and exit codes.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli/app.h"
#include "cli/os/console.h"
#include "cli/os/inherited_signals.h"
#include "cli/user_error.h"

using hvd::cli::printTo;

int main(int argc, char** argv) {
  hvd::cli::openMissingStandardFds();
  // Writes fail with EPIPE or EFBIG instead of killing hvdrun (inherited_signals.h).
  hvd::cli::ignoreOwnSignals();
  try {
    return hvd::cli::run(argc, argv);
  } catch (const hvd::cli::UserError& e) {
    printTo(stderr, "hvdrun: error: {}\n", hvd::cli::escapeControlBytes(e.what()));
    if (!e.hint().empty()) printTo(stderr, "  hint: {}\n", hvd::cli::escapeControlBytes(e.hint()));
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    printTo(stderr, "hvdrun: internal error: {} (please report this)\n", hvd::cli::escapeControlBytes(e.what()));
    return static_cast<int>(hvd::cli::ExitCode::kInternal);
  }
}
