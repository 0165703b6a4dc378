// cli/launch/launcher_probe.cc: the tools behind each launcher, asked for their versions.
#include "cli/launch/launcher_probe.h"

#include <unistd.h>

#include <cstdlib>

#include "cli/os/subprocess.h"

namespace hvd::cli {
namespace {

// Launchers this version of hvdrun can start ranks with. ssh is probed anyway, so
// --verbose can say what is there.
constexpr bool kSrunImplemented = true;
constexpr bool kMpirunImplemented = true;
constexpr bool kSshImplemented = true;

std::string envOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::string firstLine(const std::string& text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  size_t end = text.find('\n', start);
  std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Runs `tool flag` and fills version/reason. The tool's first line of output names it.
void askVersion(LauncherProbe& probe, const std::string& tool, const std::string& flag) {
  auto exe = findExecutable(tool, envOr("PATH", ""));
  if (!exe) {
    probe.reason = tool + " is not in PATH";
    return;
  }
  auto run = runAndCapture({*exe, flag});
  if (!run) {
    probe.reason = "cannot run " + *exe + ": " + run.status().message();
    return;
  }
  if (run->timedOut) {
    probe.reason = "'" + tool + " " + flag + "' did not answer within 5 s";
    return;
  }
  std::string said = firstLine(run->out.empty() ? run->err : run->out);
  if (!run->succeeded()) {
    std::string why = firstLine(run->err.empty() ? run->out : run->err);
    probe.reason = "'" + tool + " " + flag + "' failed" +
                   (run->signaled() ? " (killed by signal " + std::to_string(run->signal) + ")"
                                    : " with exit code " + std::to_string(run->exitCode)) +
                   (why.empty() ? "" : ": " + why);
    return;
  }
  probe.version = said;
  if (!probe.implemented) {
    probe.reason = "this version of hvdrun does not launch through " + tool + " yet";
    return;
  }
  probe.usable = true;
}

}  // namespace

std::string slurmConfigPath() {
  const char* explicitConf = std::getenv("SLURM_CONF");
  if (explicitConf != nullptr && explicitConf[0] != '\0') {
    return ::access(explicitConf, R_OK) == 0 ? explicitConf : "";
  }
  // /run/slurm/conf is where slurmd caches the configuration of a "configless" cluster.
  for (const char* path : {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf"}) {
    if (::access(path, R_OK) == 0) return path;
  }
  return "";
}

std::vector<LauncherProbe> probeLaunchers() {
  std::vector<LauncherProbe> probes;

  LauncherProbe local{"local", true, true, "", ""};
  probes.push_back(local);

  LauncherProbe srun{"srun", kSrunImplemented, false, "", ""};
  if (slurmConfigPath().empty()) {
    const char* explicitConf = std::getenv("SLURM_CONF");
    srun.reason = explicitConf != nullptr && explicitConf[0] != '\0'
                      ? std::string("SLURM_CONF=") + explicitConf + " cannot be read"
                      : "no Slurm configuration (SLURM_CONF is unset and /etc/slurm/slurm.conf is missing)";
  } else {
    askVersion(srun, "srun", "--version");
  }
  probes.push_back(srun);

  LauncherProbe mpirun{"mpirun", kMpirunImplemented, false, "", ""};
  askVersion(mpirun, "mpirun", "--version");
  probes.push_back(mpirun);

  LauncherProbe ssh{"ssh", kSshImplemented, false, "", ""};
  askVersion(ssh, "ssh", "-V");
  probes.push_back(ssh);
  return probes;
}

}  // namespace hvd::cli
