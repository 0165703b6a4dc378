// cli/commands/framework_probe.h: which frameworks a rank's Python can use hvd with, for
// `hvdrun --check-build`'s "Available Frameworks" (horovodrun's first section, the one HPC
// centres tell users to read). The Python is the one a rank would run: $VIRTUAL_ENV's when
// a virtual environment is active, else `python3` on PATH. It is asked, not guessed: one
// short run that finds the modules without importing them (TensorFlow alone takes seconds).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd::cli {

struct FrameworkProbe {
  std::string name;           // Horovod's name: "TensorFlow", "PyTorch", ...
  std::string module;         // what users import: "tensorflow", "torch", ...
  std::string servedBy;       // the hvd module for it: "hvd.torch"; empty when hvd needs none
  bool verboseOnly = false;   // listed with --verbose only (libraries that run on PyTorch)
  bool available = false;     // installed in that Python, with hvd importable beside it
  std::string version;        // the installed distribution and its version: "torch 2.9.1"
  std::string reason;         // why not available
};

struct FrameworkReport {
  std::string python;         // the interpreter asked; empty when none was found
  std::string pythonVersion;  // "3.11.2"
  std::string hvdLocation;    // where hvd was imported from
  std::string problem;        // why no framework can be used (no Python, no hvd, timeout)
  std::vector<FrameworkProbe> frameworks;
};

// Runs the interpreter once, for at most `deadline`. Reads VIRTUAL_ENV and PATH.
FrameworkReport probeFrameworks(std::chrono::milliseconds deadline = std::chrono::seconds(10));

// The interpreter a rank would run, as an executable path; empty with `why` set when none.
std::string ranksPython(std::string& why);

// Fills `report` from the probe script's tab-separated lines (exposed for unit tests).
void readProbeAnswer(const std::string& answer, FrameworkReport& report);

}  // namespace hvd::cli
