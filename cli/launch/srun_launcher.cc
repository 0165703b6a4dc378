// cli/launch/srun_launcher.cc: the srun command line and what its messages mean.
#include "cli/launch/srun_launcher.h"

#include <sstream>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string_view>

#include "cli/elastic/srun_elastic.h"
#include "cli/launch/launcher_outcome.h"
#include "cli/launch/task_shim.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"
#include "cli/plan/plan_output.h"
#include "cli/supervise/line_splitter.h"
#include "cli/supervise/process_supervisor.h"
#include "cli/supervise/rank_environment.h"
#include "cli/user_error.h"

namespace hvd::cli {
namespace {

// "  3: text" -> rank 3, "text"; false (line unchanged) when there is no such label.
bool stripSrunLabel(std::string_view& line, int& rank) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const size_t digits = i;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  if (i == digits || i >= line.size() || line[i] != ':') return false;
  rank = std::atoi(std::string(line.substr(digits, i - digits)).c_str());
  line.remove_prefix(i + 1);
  if (!line.empty() && line[0] == ' ') line.remove_prefix(1);
  return true;
}

// Whose a line of srun --label is: the task's, except Slurm's own words about the step
// ("slurmstepd: error: *** STEP 7.0 ON node01 CANCELLED AT ... ***"; "slurmstepd-node01:"
// where one host runs several slurmds), which srun labels with a task's number too.
int srunLineRank(std::string_view& line) {
  int rank = -1;
  bool labelled = stripSrunLabel(line, rank);
  if (labelled && (line.substr(0, 11) == "slurmstepd:" || line.substr(0, 11) == "slurmstepd-")) labelled = false;
  return labelled ? rank : -1;
}

class SrunLauncher final : public Launcher {
 public:
  std::string_view name() const override { return "srun"; }
  RankStarter starter() const override { return RankStarter::kSrun; }

  void prepare(Plan& plan, const std::string&) override {
    auto srun = findExecutable("srun", searchPath());
    if (!srun) {
      throw UserError(ExitCode::kEnvironment, "the plan comes from " + plan.sourceDetail + " but srun is not in PATH",
                      "--no-slurm runs on this machine only");
    }
    srun_ = *srun;
  }

  JobOutcome start(JobStart& s) override {
    const Options& o = s.options;
    const Plan& plan = s.plan;
    char dir[] = "/tmp/hvdrun.XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw UserError(ExitCode::kEnvironment, "cannot create a temporary directory");
    std::string hostfile = std::string(dir) + "/hosts";
    {
      std::FILE* f = std::fopen(hostfile.c_str(), "w");
      std::string text = srunHostfile(plan);
      bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
      if (f != nullptr) ok = std::fclose(f) == 0 && ok;
      if (!ok) throw UserError(ExitCode::kEnvironment, "cannot write " + hostfile);
    }
    const bool insideStep = s.env.count("SLURM_STEP_ID") > 0;
    SrunCommand command = srunCommand(plan, o, thisExecutable(), hostfile, shimJobVariables(o, plan, s.job), insideStep);
    RankProcess srun{.host = plan.masterAddr, .executable = srun_, .argv = command.argv,
                     .env = overlay(processEnvironment(), command.env)};
    SupervisorOptions supervision = s.supervision();
    supervision.processes = SupervisorOptions::Processes::kLauncher;
    supervision.lineReader = [](const RankProcess&, bool, size_t) { return srunLineReader(); };
    std::optional<long long> reportsBeforeOwnStop;
    supervision.onOwnStop = [&] { reportsBeforeOwnStop = reportsInNow(s.server); };
    SrunElastic elastic;
    if (o.minNp > 0) elastic.start(o, plan, s.server);
    auto outcome = superviseRanks({srun}, supervision);
    std::remove(hostfile.c_str());
    ::rmdir(dir);
    JobOutcome result = valueOrThrow(std::move(outcome));
    if (elastic.finish(result)) return result;
    // srun exits 143 after stopping the step and names whichever failing task it heard of
    // first; the shims' reports tell which failed first.
    auto shims = rootCauseFromShims(&s.server, result, elastic.leftBehindRanks(), reportsBeforeOwnStop);
    adoptLauncherFailure(result, shims, firstSrunFailure(result.launcherMessages), plan, "srun");
    if (result.firstFailure && !result.firstFailure->launcher.empty()) {
      const auto& words = result.firstFailure->lastStderrLines;
      if (auto hint = srunTroubleHint({words.begin(), words.end()})) result.firstFailure->launcherHint = *hint;
    }
    adoptCoordinatorEnd(result, &s.server);
    return result;
  }

 private:
  std::string srun_;
};

}  // namespace

std::unique_ptr<Launcher> makeSrunLauncher() { return std::make_unique<SrunLauncher>(); }

// srun's own cut: whole lines, no redraws of its own.
std::unique_ptr<LineReader> srunLineReader() {
  return labelledLineReader(srunLineRank, LineSplitter::kDefaultMaxLine, /*splitAtCarriageReturn=*/false);
}

std::string srunHostfile(const Plan& plan) {
  std::string out;
  out.reserve(plan.ranks.size() * 12);
  for (const RankPlan& r : plan.ranks) (out += r.where.host) += '\n';
  return out;
}

SrunCommand srunCommand(const Plan& plan, const Options& o, const std::string& hvdrunPath,
                        const std::string& hostfilePath, const std::vector<std::string>& jobWide, bool insideStep) {
  SrunCommand c;
  c.argv = {"srun", "--ntasks=" + std::to_string(plan.ranks.size()), "--distribution=arbitrary",
            o.minNp > 0 ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1", "--label",
            // One Ctrl-C ends the step (srun alone would only print the tasks' state).
            "--quit-on-interrupt"};
  // A second step inside a running one (srun inside srun) would wait for free CPUs forever.
  if (insideStep) c.argv.push_back("--overlap");
  // srun copies its stdin to every task unless told otherwise; hvdrun gives it to one.
  c.argv.push_back("--input=" + (o.stdinRank ? std::to_string(*o.stdinRank) : std::string("none")));
  // MPI programs started by srun get their ranks and addresses from Slurm's PMIx server.
  if (o.pmix) c.argv.push_back("--mpi=pmix");
  // Slurm's own binding (its task/affinity plugin): each task to the cores it was given.
  // srun has no overload qualifier: it places tasks that outnumber their cores itself.
  if (plan.bindTo != BindTo::kNone) c.argv.push_back(plan.bindTo == BindTo::kSocket ? "--cpu-bind=sockets" : "--cpu-bind=cores");
  c.env = {"SLURM_HOSTFILE=" + hostfilePath};
  for (std::string& kv : shimPlanVariables(plan, o)) c.env.push_back(std::move(kv));
  c.env.insert(c.env.end(), jobWide.begin(), jobWide.end());
  // --srun-args: the user's, after hvdrun's own (srun takes the last of a repeated option).
  for (const std::string& a : withHvdrunExports(o.srunArgs, c.env)) c.argv.push_back(a);
  c.argv.push_back(shimExecutable(o.srunArgs, hvdrunPath));
  // The shim rebuilds the same plan on its node and stays as the rank's parent (task_shim.h).
  for (auto& a : execRankArguments(o)) c.argv.push_back(std::move(a));
  return c;
}

std::string shimExecutable(const std::vector<std::string>& srunArgs, const std::string& hvdrunPath) {
  bool container = false;
  std::string mounts;
  for (size_t i = 0; i < srunArgs.size(); ++i) {
    const std::string& w = srunArgs[i];
    if (w.rfind("--container-image", 0) == 0) container = true;
    if (w.rfind("--container-mounts=", 0) == 0) mounts += "," + w.substr(19);
    if (w == "--container-mounts" && i + 1 < srunArgs.size()) mounts += "," + srunArgs[i + 1];
  }
  if (!container) return hvdrunPath;
  // SRC:DST[:FLAGS] or SRC alone (mounted at the same path), comma-separated.
  std::stringstream items(mounts);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    std::string source = item.substr(0, item.find(':'));
    std::string rest = item.find(':') == std::string::npos ? source : item.substr(item.find(':') + 1);
    std::string target = rest.substr(0, rest.find(':'));
    while (source.size() > 1 && source.back() == '/') source.pop_back();
    while (target.size() > 1 && target.back() == '/') target.pop_back();
    if (hvdrunPath.rfind(source + "/", 0) == 0) return target + hvdrunPath.substr(source.size());
  }
  return "hvdrun";  // the image's own, on its PATH (the hvd package installs it)
}

std::vector<std::string> withHvdrunExports(const std::vector<std::string>& srunArgs,
                                           const std::vector<std::string>& env) {
  // An --export that does not pass ALL would keep hvdrun's variables from the task shim:
  // their names are added to it (srun exports a named variable from its own environment).
  std::string names;
  for (const std::string& kv : env) {
    std::string name = kv.substr(0, kv.find('='));
    if (name != "SLURM_HOSTFILE") names += "," + name;  // srun's own, read before the tasks
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < srunArgs.size(); ++i) {
    std::string word = srunArgs[i];
    bool joined = word.rfind("--export=", 0) == 0;
    if (!joined && word == "--export" && i + 1 < srunArgs.size()) {
      out.push_back(word);
      word = srunArgs[++i];
    } else if (!joined) {
      out.push_back(word);
      continue;
    }
    std::string value = joined ? word.substr(9) : word;
    bool all = false;
    std::stringstream items(value);
    for (std::string item; std::getline(items, item, ',');) all = all || item == "ALL";
    if (!all) value += names;
    out.push_back(joined ? "--export=" + value : value);
  }
  return out;
}

std::optional<RankFailure> firstSrunFailure(const std::vector<std::string>& messages) {
  static const std::regex kTask(R"(^srun: error: ([^:]+): tasks? (\d+)(?:-\d+)?: (.*)$)");
  static const std::regex kExit(R"(^Exited with exit code (\d+)$)");
  for (const std::string& line : messages) {
    std::smatch m;
    if (!std::regex_match(line, m, kTask)) continue;
    RankFailure f;
    f.host = m[1];
    f.rank = std::stoi(m[2]);
    std::string what = m[3];
    std::smatch e;
    if (std::regex_match(what, e, kExit)) {
      f.exitCode = std::stoi(e[1]);
      return f;
    }
    for (int sig = 1; sig < 65; ++sig) {
      const char* text = ::strsignal(sig);
      if (text != nullptr && what == text) {
        f.signal = sig;
        return f;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> srunTroubleHint(const std::vector<std::string>& messages) {
  auto says = [&messages](std::string_view words) {
    return std::any_of(messages.begin(), messages.end(),
                       [words](const std::string& line) { return line.find(words) != std::string::npos; });
  };
  // First the controller: a timed-out confirmation is also followed by "Expired or invalid job".
  if (says("Socket timed out") || says("Unable to contact slurm controller")) {
    return "the Slurm controller (slurmctld) did not answer srun in time: 'scontrol ping' says whether it is up; no "
           "rank was started by this step";
  }
  if (says("execve()") && says("hvdrun")) {
    return "a node could not start hvdrun, which each rank runs under (the task shim): it must be at the same path on "
           "every node (a shared file system), and in a container (--srun-args --container-image=...) installed in the "
           "image (the hvd package puts hvdrun on its PATH) or mounted with --container-mounts=DIR:DIR";
  }
  if (says("has expired") || says("Invalid job id") || says("Expired or invalid job")) {
    return "the Slurm job in this shell's SLURM_JOB_ID has ended (variables left from an old salloc or job?): get a "
           "new allocation, or run on this machine alone with --no-slurm";
  }
  return std::nullopt;
}

}  // namespace hvd::cli
