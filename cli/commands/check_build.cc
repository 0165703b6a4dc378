// cli/commands/check_build.cc: backend and launcher probes turned into the --check-build report.
#include "cli/commands/check_build.h"

#include <fmt/format.h>

#include <map>

#include "cli/build_info.h"
#include "cli/commands/framework_probe.h"
#include "cli/launch/launcher_probe.h"
#include "runtime/backends/backend_probe.h"
#include "runtime/common/hmac.h"

namespace hvd::cli {
namespace {

// Which backend each item rests on, and whether hvdrun implements the item at all: an MPI
// controller (negotiation over MPI) it does not, and says so instead of claiming what a
// rank could not do.
struct ItemSpec {
  const char* name;
  const char* backend;
  bool implemented;
};

constexpr ItemSpec kControllers[] = {
    {"TCP", "tcp", true},
    {"MPI", "mpi", false},
    {"PMIx", "pmix", true},
};
constexpr ItemSpec kTensorOperations[] = {
    {"Ring (CPU)", "tcp", true},
    {"MPI", "mpi", true},
    {"NCCL", "nccl", true},
    {"CUDA", "cuda", true},
};

std::string describe(const backends::BackendProbe& probe) {
  std::string text;
  if (!probe.buildVersion.empty()) text += "built with " + probe.buildVersion;
  if (!probe.runVersion.empty()) text += (text.empty() ? "" : "; ") + std::string("found ") + probe.runVersion;
  return text;
}

template <size_t N>
CheckSection backendSection(const char* title, const ItemSpec (&specs)[N],
                            std::map<std::string, backends::BackendProbe>& cache) {
  CheckSection section{title, {}, ""};
  for (const ItemSpec& spec : specs) {
    auto [it, fresh] = cache.try_emplace(spec.backend);
    if (fresh) {
      const backends::BackendEntry* entry = backends::findBackend(spec.backend);
      it->second = entry != nullptr ? backends::probeBackend(*entry) : backends::BackendProbe{};
    }
    const backends::BackendProbe& probe = it->second;
    CheckItem item{spec.name, probe.usable && spec.implemented, describe(probe), false};
    std::string why = !probe.usable ? probe.reason
                      : !spec.implemented ? "not implemented in this version of hvdrun yet"
                                          : "";
    if (!why.empty()) item.detail += (item.detail.empty() ? "" : "; ") + why;
    section.items.push_back(std::move(item));
  }
  return section;
}

CheckSection frameworkSection() {
  FrameworkReport report = probeFrameworks();
  CheckSection section{"Available Frameworks", {}, ""};
  if (!report.python.empty()) {
    section.verboseNote = "the Python ranks run: " + report.python +
                          (report.pythonVersion.empty() ? "" : " (" + report.pythonVersion + ")") +
                          (report.hvdLocation.empty() ? "" : ", hvd from " + report.hvdLocation);
  }
  for (const FrameworkProbe& probe : report.frameworks) {
    std::string detail = probe.version;
    if (probe.available && !probe.servedBy.empty()) detail += " through " + probe.servedBy;
    if (!probe.available) detail += (detail.empty() ? "" : "; ") + probe.reason;
    section.items.push_back({probe.name, probe.available, detail, probe.verboseOnly});
  }
  return section;
}

}  // namespace

std::vector<CheckSection> collectBuildReport() {
  std::map<std::string, backends::BackendProbe> cache;
  std::vector<CheckSection> sections;
  sections.push_back(frameworkSection());
  sections.push_back(backendSection("Available Controllers", kControllers, cache));
  sections.push_back(backendSection("Available Tensor Operations", kTensorOperations, cache));
  CheckSection launchers{"Available Launchers", {}, ""};
  for (const LauncherProbe& probe : probeLaunchers()) {
    std::string detail = probe.version.empty() ? "" : "found " + probe.version;
    if (!probe.usable) detail += (detail.empty() ? "" : "; ") + probe.reason;
    launchers.items.push_back({probe.name, probe.usable, detail, false});
  }
  sections.push_back(std::move(launchers));
  // The rendezvous and the transports authenticate every connection with this HMAC.
  sections.push_back({"Job Authentication", {{"HMAC-SHA-256 from " + cryptoLibraryVersion(), true, "", false}}, ""});
  return sections;
}

std::string renderBuildReport(const std::vector<CheckSection>& sections, bool verbose) {
  std::string out = fmt::format("hvdrun v{}:\n", build_info::kVersion);
  for (const CheckSection& section : sections) {
    out += fmt::format("\n{}:\n", section.title);
    if (verbose && !section.verboseNote.empty()) out += fmt::format("    ({})\n", section.verboseNote);
    for (const CheckItem& item : section.items) {
      if (item.verboseOnly && !verbose) continue;
      out += fmt::format("    [{}] {}", item.available ? 'X' : ' ', item.name);
      if (verbose && !item.detail.empty()) out += fmt::format(": {}", item.detail);
      out += '\n';
    }
  }
  return out;
}

std::string versionText() {
  std::string backends;
  for (const auto& entry : backends::registeredBackends()) {
    if (entry.compiled) backends += (backends.empty() ? "" : " ") + std::string(entry.id);
  }
  std::string text = fmt::format("hvdrun {}\ncommit: {}\ncompiler: {}\nbuild type: {}\nbackends compiled in: {}\n",
                                 build_info::kVersion, build_info::kGitCommit, build_info::kCompiler,
                                 build_info::kBuildType, backends);
  if (build_info::kSanitizers[0] != '\0') text += fmt::format("sanitizers: {}\n", build_info::kSanitizers);
  return text;
}

}  // namespace hvd::cli
