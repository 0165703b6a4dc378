// cli/job/job_checks.cc: the refusals before a launch.
#include "cli/job/job_checks.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cli/os/subprocess.h"
#include "cli/plan/shell_quote.h"
#include "cli/user_error.h"

namespace hvd::cli {

std::string checkProgram(const Options& o) {
  auto exe = findExecutable(o.program.front(), searchPath());
  if (!exe) {
    // torchrun runs `torchrun train.py` with Python itself; here, as under horovodrun, the
    // interpreter comes first.
    const std::string& program = o.program.front();
    const bool script = program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
    std::vector<std::string> withPython{"python"};
    withPython.insert(withPython.end(), o.program.begin(), o.program.end());
    throw UserError(ExitCode::kEnvironment, "cannot run the program: " + exe.status().message(),
                    script ? "nothing was started; a Python script runs with its interpreter first, as under "
                             "horovodrun: hvdrun [options] " + shellJoin(withPython)
                           : "nothing was started; check the program's name, PATH and its execute permission");
  }
  if (auto problem = interpreterProblem(*exe)) {
    throw UserError(ExitCode::kEnvironment, "cannot run the program: " + *exe + ": " + *problem,
                    "nothing was started; mend the script's first line (dos2unix for Windows line ends), or put "
                    "its interpreter before it on hvdrun's command line");
  }
  return *exe;
}

// --stdin names a rank of this job.
void checkStdinRank(const Options& o, const Plan& plan) {
  const int ranks = static_cast<int>(plan.ranks.size());
  if (o.stdinRank && *o.stdinRank >= ranks) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--stdin {}: the job has {} ranks (0-{})", *o.stdinRank, ranks, ranks - 1),
                    "name one of the job's ranks, or none");
  }
}

// --ranks-filter names at least one rank of this job: one that names none showed nothing at
// all on the console, as if every rank were silent. Ranks past the job's end are allowed
// beside one in it, so one filter serves jobs of different sizes.
void checkRanksFilter(const Options& o, const Plan& plan) {
  const int ranks = static_cast<int>(plan.ranks.size());
  if (o.ranksFilter.empty() || *o.ranksFilter.begin() < ranks) return;
  throw UserError(ExitCode::kUsage,
                  fmt::format("--ranks-filter names no rank of this job, which has {} ranks (0-{})", ranks, ranks - 1),
                  "name at least one of the job's ranks; --output-filename keeps every rank's output in files");
}

// --timeline-filename: the ranks write their traces beside it and hvdrun merges them into
// it, replacing it. Checked before anything starts: a directory that is not there failed
// every rank at init, and a device (/dev/null) was replaced by a regular file.
void checkTimelinePath(const Options& o) {
  if (o.timelineFile.empty()) return;
  const std::string& path = o.timelineFile;
  auto refuse = [&](const std::string& why, const std::string& hint) {
    throw UserError(ExitCode::kUsage, "--timeline-filename " + path + ": " + why, hint);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse("is a directory", "name the file the merged trace goes to");
    if (!S_ISREG(st.st_mode)) {
      refuse("not a regular file (a device, pipe or socket); hvdrun merges the ranks' traces into a file it replaces",
             "name a file; leave the option out for no timeline");
    }
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    refuse("there is no directory " + dir, "create it first, or name a file in a directory that exists");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    refuse("cannot write in " + dir + ": " + std::strerror(errno), "name a file in a directory you may write");
  }
}

// --min-np: hvdrun must hear of each rank's end (forked, its host agents', or the srun
// task shims' reports) while the others go on (elastic_options.h), and there must be that
// many ranks.
void checkElastic(const Options& o, const Plan& plan, RankStarter starter) {
  checkElasticLaunch(o, starter);
  if (o.minNp == 0) return;
  if (o.maxNp > 0 && o.maxNp < static_cast<int>(plan.ranks.size())) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--max-np {} is less than the job's {} rank(s)", o.maxNp, plan.ranks.size()),
                    "give -np at most --max-np");
  }
  if (!o.timelineFile.empty()) {
    throw UserError(ExitCode::kUsage,
                    "--timeline-filename and --min-np: each rank's trace is named by its rank, which passes to "
                    "another process when an elastic job's world re-forms",
                    "leave out one of them (a fixed job's timeline shows the same collectives)");
  }
  if (o.minNp > static_cast<int>(plan.ranks.size())) {
    throw UserError(ExitCode::kUsage,
                    fmt::format("--min-np {} is more than the job's {} rank(s)", o.minNp, plan.ranks.size()),
                    "give -np at least --min-np");
  }
}

}  // namespace hvd::cli
