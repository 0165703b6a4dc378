// cli/launch/mpirun_launcher.cc: the mpirun command line and what its messages mean.
#include "cli/launch/mpirun_launcher.h"

#include <unistd.h>

#include <regex>

#include "cli/launch/launcher_outcome.h"
#include "cli/launch/open_mpi_tags.h"
#include "cli/launch/task_shim.h"
#include "cli/os/machine.h"
#include "cli/os/subprocess.h"
#include "cli/plan/plan_output.h"
#include "cli/supervise/process_supervisor.h"
#include "cli/user_error.h"

namespace hvd::cli {
namespace {

class MpirunLines final : public LineReader {
 public:
  explicit MpirunLines(size_t maxLine) : tags_(maxLine) {}
  void feed(std::string_view bytes, const OnLine& onLine) override { tags_.feed(bytes, onLine); }
  void finish(const OnLine& onLine) override { tags_.finish(onLine); }
  bool holdsPiece(bool openLines) const override { return openLines ? tags_.holdsPiece() : tags_.holdsRedraw(); }
  void flushPiece(bool openLines, const OnLine& onLine) override {
    if (openLines) {
      tags_.flushPiece(onLine);
    } else {
      tags_.flushRedraw(onLine);
    }
  }

 private:
  // mpirun's output holds tagged pieces of every rank's lines: it is read as it comes, not in
  // lines, and cut per rank once the tags are read. Read in lines, a progress bar redrawn for
  // an epoch made one of megabytes, and past a cap its rest lost its tags and printed as
  // mpirun's.
  OpenMpiTagReader tags_;
};

class MpirunLauncher final : public Launcher {
 public:
  std::string_view name() const override { return "mpirun"; }
  RankStarter starter() const override { return RankStarter::kMpirun; }

  void prepare(Plan&, const std::string&) override {
    auto mpirun = findExecutable("mpirun", searchPath());
    if (!mpirun) {
      throw UserError(ExitCode::kEnvironment, "--mpi needs Open MPI's mpirun, which is not in PATH",
                      "install openmpi-bin, or launch without --mpi");
    }
    mpirun_ = *mpirun;
  }

  // Ranks learn who they are from OMPI_COMM_WORLD_*.
  JobOutcome start(JobStart& s) override {
    MpirunCommand command = mpirunLaunchCommand(s.plan, s.options, thisExecutable(),
                                                shimJobVariables(s.options, s.plan, s.job), ::geteuid() == 0);
    RankProcess process{.host = s.plan.masterAddr, .executable = mpirun_, .argv = command.argv,
                        .env = overlay(processEnvironment(), command.env)};
    SupervisorOptions supervision = s.supervision();
    supervision.processes = SupervisorOptions::Processes::kLauncher;
    supervision.lineReader = [](const RankProcess&, bool, size_t maxLine) { return mpirunLineReader(maxLine); };
    std::optional<long long> reportsBeforeOwnStop;
    supervision.onOwnStop = [&] { reportsBeforeOwnStop = reportsInNow(s.server); };
    JobOutcome result = valueOrThrow(superviseRanks({process}, supervision));
    auto shims = rootCauseFromShims(&s.server, result, {}, reportsBeforeOwnStop);
    adoptLauncherFailure(result, shims, firstMpirunFailure(result.launcherMessages), s.plan, "mpirun");
    adoptCoordinatorEnd(result, &s.server);
    return result;
  }

 private:
  std::string mpirun_;
};

}  // namespace

std::unique_ptr<Launcher> makeMpirunLauncher() { return std::make_unique<MpirunLauncher>(); }

std::unique_ptr<LineReader> mpirunLineReader(size_t maxLine) { return std::make_unique<MpirunLines>(maxLine); }

MpirunCommand mpirunLaunchCommand(const Plan& plan, const Options& o, const std::string& hvdrunPath,
                                  const std::vector<std::string>& jobWide, bool asRoot) {
  MpirunCommand c;
  // The shim rebuilds the same plan on its node and stays as the rank's parent (task_shim.h).
  std::vector<std::string> shim{hvdrunPath};
  for (auto& a : execRankArguments(o)) shim.push_back(std::move(a));
  // The plan's own mpirun line (-np, -H, -bind-to none -map-by slot, interfaces, -x for
  // shared variables), running the shim instead of the program.
  c.argv = mpirunCommand(plan, shim);
  std::vector<std::string> extra{"--tag-output", "--stdin", o.stdinRank ? std::to_string(*o.stdinRank) : "none"};
  if (asRoot) extra.push_back("--allow-run-as-root");
  extra.insert(extra.end(), o.mpiArgs.begin(), o.mpiArgs.end());  // --mpi-args: the user's, after hvdrun's own
  c.env = shimPlanVariables(plan, o);
  c.env.insert(c.env.end(), jobWide.begin(), jobWide.end());
  for (const std::string& kv : c.env) extra.insert(extra.end(), {"-x", kv.substr(0, kv.find('='))});
  c.argv.insert(c.argv.begin() + 1, extra.begin(), extra.end());
  // Job-wide values decided by the launcher replace the plan's -x NAME=value copies.
  for (size_t i = 0; i + 1 < c.argv.size();) {
    bool decided = false;
    if (c.argv[i] == "-x" && c.argv[i + 1].find('=') != std::string::npos) {
      std::string name = c.argv[i + 1].substr(0, c.argv[i + 1].find('='));
      for (const std::string& kv : jobWide) decided |= kv.compare(0, name.size() + 1, name + "=") == 0;
    }
    if (decided) {
      c.argv.erase(c.argv.begin() + static_cast<long>(i), c.argv.begin() + static_cast<long>(i) + 2);
    } else {
      ++i;
    }
  }
  return c;
}

std::optional<RankFailure> firstMpirunFailure(const std::vector<std::string>& messages) {
  static const std::regex kProcess(R"(^\s*Process name: \[\[\d+,\d+\],(\d+)\]\s*$)");
  static const std::regex kExit(R"(^\s*Exit code:\s*(\d+)\s*$)");
  static const std::regex kSignal(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+))");
  std::optional<int> rank;
  for (const std::string& line : messages) {
    std::smatch m;
    if (std::regex_search(line, m, kSignal)) {
      RankFailure f;
      f.rank = std::stoi(m[1]);
      f.host = m[2];
      f.signal = std::stoi(m[3]);
      return f;
    }
    if (std::regex_match(line, m, kProcess)) rank = std::stoi(m[1]);
    if (rank && std::regex_match(line, m, kExit)) {
      RankFailure f;
      f.rank = *rank;
      f.exitCode = std::stoi(m[1]);
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace hvd::cli
