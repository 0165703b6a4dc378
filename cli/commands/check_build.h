// cli/commands/check_build.h: `hvdrun --check-build`, in horovodrun's layout, which users grep:
// "hvdrun v<version>:", then sections of 4-space-indented "[X] Name" / "[ ] Name" items.
// An item is [X] only when it is compiled in, implemented and usable on this machine now.
#pragma once

#include <string>
#include <vector>

namespace hvd::cli {

struct CheckItem {
  std::string name;
  bool available = false;
  std::string detail;  // versions found and, when not available, why: shown with --verbose
  bool verboseOnly = false;
};

struct CheckSection {
  std::string title;
  std::vector<CheckItem> items;
  std::string verboseNote;  // printed under the title with --verbose: what was asked
};

// Probes the rank's Python, every backend and launcher (blocks for up to a few seconds per
// external tool, 10 s for the Python).
std::vector<CheckSection> collectBuildReport();

std::string renderBuildReport(const std::vector<CheckSection>& sections, bool verbose);

// `hvdrun --version`: the version, commit, compiler, build type and backends compiled in.
std::string versionText();

}  // namespace hvd::cli
