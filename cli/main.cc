// cli/main.cc: the one place errors become text and exit codes.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "cli/app.h"
#include "cli/os/console.h"
#include "cli/user_error.h"

using hvd::cli::printTo;

int main(int argc, char** argv) {
  hvd::cli::openMissingStandardFds();
  // A reader that went away (`| head -1`, a closed terminal) must not decide hvdrun's exit
  // code: writes fail with EPIPE instead, and are dropped (cli/os/console.h).
  std::signal(SIGPIPE, SIG_IGN);
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
