// cli/main.cc: the one place errors become text and exit codes.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli/app.h"
#include "cli/user_error.h"

int main(int argc, char** argv) {
  try {
    return hvd::cli::run(argc, argv);
  } catch (const hvd::cli::UserError& e) {
    fmt::print(stderr, "hvdrun: error: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "  hint: {}\n", e.hint());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    fmt::print(stderr, "hvdrun: internal error: {} (please report this)\n", e.what());
    return static_cast<int>(hvd::cli::ExitCode::kInternal);
  }
}
