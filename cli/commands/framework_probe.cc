// cli/commands/framework_probe.cc: one run of the rank's Python, read back line by line.
#include "cli/commands/framework_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "cli/os/subprocess.h"

namespace hvd::cli {
namespace {

// The frameworks in horovodrun's order, then the libraries that run on PyTorch (listed
// with --verbose). Each module's distributions are tried in turn for its version.
struct Known {
  const char* name;
  const char* module;
  const char* servedBy;
  bool verboseOnly;
};
constexpr Known kKnown[] = {
    {"TensorFlow", "tensorflow", "hvd.tensorflow", false},
    {"PyTorch", "torch", "hvd.torch", false},
    {"Keras", "keras", "hvd.keras", false},
    {"PyTorch Lightning", "lightning", "", true},
    {"Accelerate", "accelerate", "", true},
};

// Prints one tab-separated line per fact. Finds modules with find_spec, which imports only
// their parents: hvd is imported (fast, and it must import for a rank to use it), the
// frameworks are not. Distribution names differ from module names for some.
constexpr const char* kScript = R"PY(
import importlib.metadata as md, importlib.util as iu, sys
print("python\t%s\t%s" % (sys.version.split()[0], sys.executable))
try:
    import hvd
    print("hvd\t%s" % hvd.__file__.rsplit("/", 2)[0])
except Exception as e:
    print("nohvd\t%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    hvd = None
dists = {"tensorflow": ["tensorflow", "tensorflow-cpu", "tensorflow-gpu"], "torch": ["torch"], "keras": ["keras"],
         "lightning": ["lightning", "pytorch-lightning"], "accelerate": ["accelerate"]}
for module in sys.argv[1:]:
    names = [module, "pytorch_lightning"] if module == "lightning" else [module]
    found = any(iu.find_spec(n) is not None for n in names)
    version = ""
    for d in dists.get(module, [module]):
        try:
            version = "%s %s" % (d, md.version(d))
            break
        except Exception:
            pass
    served = ""
    if found and hvd is not None and module in ("tensorflow", "torch", "keras"):
        served = "1" if iu.find_spec("hvd." + module) is not None else "0"
    print("module\t%s\t%d\t%s\t%s" % (module, found, version, served))
)PY";

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) out.push_back(field);
  return out;
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string ranksPython(std::string& why) {
  const char* venv = std::getenv("VIRTUAL_ENV");
  if (venv != nullptr && venv[0] != '\0') {
    for (const char* name : {"python3", "python"}) {
      std::string path = std::string(venv) + "/bin/" + name;
      if (executable(path)) return path;
    }
    why = std::string("VIRTUAL_ENV is ") + venv + " but it has no bin/python3";
    return "";
  }
  auto found = findExecutable("python3", searchPath());
  if (!found) {
    why = "no virtual environment is active and python3 is not in PATH";
    return "";
  }
  return *found;
}

void readProbeAnswer(const std::string& answer, FrameworkReport& report) {
  bool hvdFound = false;
  std::string noHvd;
  std::istringstream lines(answer);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f = fields(line);
    if (f.empty()) continue;
    if (f[0] == "python" && f.size() >= 3) {
      report.pythonVersion = f[1];
    } else if (f[0] == "hvd" && f.size() >= 2) {
      hvdFound = true;
      report.hvdLocation = f[1];
    } else if (f[0] == "nohvd") {
      noHvd = f.size() >= 2 ? f[1] : "it cannot be imported";
    } else if (f[0] == "module" && f.size() >= 4) {
      for (FrameworkProbe& probe : report.frameworks) {
        if (probe.module != f[1]) continue;
        bool installed = f[2] == "1";
        probe.version = f[3];
        bool served = probe.servedBy.empty() || (f.size() >= 5 && f[4] == "1");
        if (!installed) {
          probe.reason = "not installed in " + report.python;
        } else if (!hvdFound) {
          probe.reason = "hvd cannot be imported in " + report.python + ": " + noHvd;
        } else if (!served) {
          probe.reason = "this hvd has no " + probe.servedBy;
        } else {
          probe.available = true;
        }
      }
    }
  }
  if (!hvdFound) report.problem = "hvd cannot be imported in " + report.python + (noHvd.empty() ? "" : ": " + noHvd);
  for (FrameworkProbe& probe : report.frameworks) {
    if (!probe.available && probe.reason.empty()) probe.reason = report.problem.empty() ? "not reported" : report.problem;
  }
}

FrameworkReport probeFrameworks(std::chrono::milliseconds deadline) {
  FrameworkReport report;
  for (const Known& known : kKnown) {
    report.frameworks.push_back({known.name, known.module, known.servedBy, known.verboseOnly, false, "", ""});
  }
  auto failAll = [&](const std::string& why) {
    report.problem = why;
    for (FrameworkProbe& probe : report.frameworks) probe.reason = why;
    return report;
  };
  std::string why;
  report.python = ranksPython(why);
  if (report.python.empty()) return failAll("no Python with hvd: " + why);
  std::vector<std::string> argv{report.python, "-c", kScript};
  for (const Known& known : kKnown) argv.push_back(known.module);
  auto run = runAndCapture(argv, RunOptions{deadline, std::nullopt, ""});
  if (!run) return failAll("cannot run " + report.python + ": " + run.status().message());
  if (run->timedOut) {
    return failAll(report.python + " did not answer within " + std::to_string(deadline.count() / 1000) + " s");
  }
  if (!run->succeeded()) {
    std::string said = run->err.substr(0, run->err.find('\n'));
    return failAll(report.python + " failed" + (said.empty() ? "" : ": " + said));
  }
  readProbeAnswer(run->out, report);
  return report;
}

}  // namespace hvd::cli
