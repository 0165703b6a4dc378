// cli/job/job_report.cc: the summary's words.
#include "cli/job/job_report.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "cli/exit_code.h"
#include "cli/os/console.h"
#include "cli/supervise/rank_failure.h"
#include "cli/user_error.h"

namespace hvd::cli {
namespace {

// An ssh launch's host agent (or its ssh) ended before its ranks could report: the
// connection failed or broke, or the agent could not start them.
std::string agentFailureText(const JobOutcome& outcome, const RankFailure& f) {
  std::string how = f.agentSilentSeconds > 0
                        ? fmt::format("stopped answering: nothing came from it for {} s (stopped by SIGSTOP or a "
                                      "debugger, its host hung, or the network between here and there is down); "
                                      "hvdrun killed it there where it could reach it",
                                      f.agentSilentSeconds)
                    : f.signal == 0 && f.exitCode == 255 ? std::string("lost its ssh connection (ssh exit code 255)")
                                                         : endText(f);
  std::string text = fmt::format("hvdrun: error: the host agent for {} (rank {} and the others there) {}\n", f.host,
                                 f.rank, how);
  if (!f.lastStderrLines.empty()) {
    text += "  its last words:\n";
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  }
  text += fmt::format("  hvdrun stopped the ranks on every other host; exit code {}\n", outcome.exitCode);
  return text;
}

// srun or mpirun failed without naming a rank: its own words (above, and kept) say why.
std::string launcherFailureText(const RankFailure& f) {
  std::string how = endText(f);
  std::string text = fmt::format("hvdrun: error: {} {}, and no rank reported a failure of its own (pid {}, at {})\n",
                                 f.launcher, how, f.pid, f.when.empty() ? nowIso8601() : f.when);
  if (!f.lastStderrLines.empty()) {
    text += fmt::format("  {}'s last words:\n", f.launcher);
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  }
  if (!f.launcherHint.empty()) {
    text += fmt::format("  hint: {}\n", f.launcherHint);
  } else {
    text += fmt::format("  hint: {} could not start the job, or lost a node or a daemon on the way; its messages say "
                        "which\n", f.launcher);
  }
  return text;
}

std::string failureSummaryText(const JobOutcome& outcome, int total, const std::optional<RecordedError>& recorded) {
  const RankFailure& f = *outcome.firstFailure;
  if (f.launcherProcess) return agentFailureText(outcome, f);
  if (!f.launcher.empty()) return launcherFailureText(f);
  std::string how = endText(f);
  std::string where = "host " + f.host;
  if (f.pid > 0) where += fmt::format(", pid {}", f.pid);  // srun does not tell a task's pid
  if (!f.when.empty()) where += ", at " + f.when;
  std::string text = fmt::format("hvdrun: error: rank {} {} ({})\n", f.rank, how, where);
  if (!f.lastStderrLines.empty()) {
    text += fmt::format("  last lines of rank {}'s stderr:\n", f.rank);
    for (const auto& line : f.lastStderrLines) text += fmt::format("    | {}\n", line);
  } else {
    text += fmt::format("  rank {} wrote nothing to stderr\n", f.rank);
  }
  if (recorded) {
    text += fmt::format("  rank {} raised (recorded by torch's @record): {}\n", f.rank, recorded->message);
    if (!recorded->where.empty()) text += fmt::format("    {}\n", recorded->where);
  }
  if (f.peerEndedCleanly >= 0) {
    text += fmt::format("  rank {0} had ended with exit code 0 while rank {1} still ran collectives: every rank must "
                        "make the same collective calls, so one that returns early (work done on rank {0} alone, a "
                        "last batch only some ranks have) leaves its peers without it; hvd.join() lets a rank out "
                        "of data finish beside the others\n",
                        f.peerEndedCleanly, f.rank);
  }
  if (!outcome.stoppedWhenFailed.empty()) {
    text += fmt::format("  rank(s) {} {} stopped (SIGSTOP, or a debugger) when rank {} failed: a stopped rank stalls "
                        "its peers until their timeout, so look there first\n",
                        rankListText(outcome.stoppedWhenFailed, 16), outcome.stoppedWhenFailed.size() == 1 ? "was" : "were",
                        f.rank);
  }
  if (f.signal == SIGKILL && f.oomKillsOnHost > 0) {
    text += fmt::format("  the kernel's OOM killer ended {} process(es) on {} while the rank ran (oom_kill in "
                        "/proc/vmstat): rank {} most likely ran out of memory, its own or a limit's (a cgroup, Slurm's "
                        "--mem); dmesg there names what it killed\n",
                        f.oomKillsOnHost, f.host, f.rank);
  }
  if (f.signal != 0 && f.signal == outcome.noticePassedOn) {
    text += fmt::format("  hvdrun had passed {0} on to every rank (a notice, as from Slurm's --signal or scancel "
                        "--signal), and rank {1} had no handler for it, so it ended rank {1}\n",
                        signalName(f.signal), f.rank);
  }
  if (f.signal == 0 && f.exitCode == static_cast<int>(ExitCode::kStalled)) {
    text += "  a collective stalled: some ranks never submitted it within HOROVOD_STALL_SHUTDOWN_TIME_SECONDS "
            "(--stall-check-shutdown-time-seconds); the ranks' lines above name it and them\n";
  }
  std::string also;
  if (!outcome.alsoFailed.empty()) {
    std::vector<int> ranks = outcome.alsoFailed;
    std::sort(ranks.begin(), ranks.end());
    also = fmt::format("; {} other(s) ended with errors of their own (rank(s) {})", ranks.size(), rankListText(ranks, 16));
  }
  text += fmt::format("  hvdrun stopped {} other rank(s) of {}{}; exit code {}\n", outcome.ranksStopped, total, also,
                      outcome.exitCode);
  return text;
}

// --output-filename's directory keeps what hvdrun said of the job's end in "summary"
// beside the ranks' files: it is all there is when stderr was closed or went nowhere.
// An earlier job's is removed before the job starts, so one found there is this job's.
std::string summaryPath(const std::string& outputDir) { return outputDir + "/summary"; }

// Whether the summary path holds nothing, or a summary hvdrun wrote (a regular file that
// starts as every summary does): a directory given as --output-filename may hold a file of
// the user's by that name, or a link to one, which hvdrun must neither remove nor overwrite.
bool summaryIsOurs(const std::string& outputDir) {
  const std::string path = summaryPath(outputDir);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISREG(st.st_mode)) return false;
  char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::string_view(head, sizeof head) == "hvdrun: ";
}

}  // namespace

void applyOutputOptions(const Options& o, SupervisorOptions& supervision) {
  supervision.consoleRanks = o.ranksFilter;
  supervision.timestamps = o.timestampOutput;
  supervision.maxLineBytes = o.maxLineBytes;
  if (o.outputDir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.outputDir, ec);
  if (ec || !std::filesystem::is_directory(o.outputDir)) {
    throw UserError(ExitCode::kUsage, "--output-filename: cannot create directory '" + o.outputDir + "'" +
                                          (ec ? ": " + ec.message() : ""),
                    "give a directory hvdrun may create and write");
  }
  supervision.outputDir = o.outputDir;
  if (summaryIsOurs(o.outputDir)) std::filesystem::remove(summaryPath(o.outputDir), ec);  // an earlier job's
}

// What hvdrun says of the job's end, empty when there is nothing to say.
std::string reportText(const JobOutcome& outcome, int ranks, const std::optional<RecordedError>& recorded) {
  std::string text;
  if (outcome.consoleStalled) {
    text += "hvdrun: warning: the console stopped taking output, and hvdrun stopped waiting for it; the ranks' "
            "last lines are missing there\n";
  }
  if (!outcome.neverReady.empty()) {
    std::string list = rankListText(outcome.neverReady, 32);
    return text + fmt::format("hvdrun: error: rank(s) {} did not reach the rendezvous in time, while the other {} did; "
                              "stopped the job\n  hint: a rank stuck before the runtime's init, or unable to reach hvdrun; "
                              "--start-timeout gives start-up more time\n",
                              list, ranks - static_cast<int>(outcome.neverReady.size()));
  }
  if (!outcome.leftBehind.empty()) {
    std::vector<int> lost;
    for (const RankFailure& f : outcome.leftBehind) lost.push_back(f.rank);
    text += fmt::format("hvdrun: the elastic job went on without rank(s) {} after they failed\n", rankListText(lost, 32));
  }
  if (outcome.firstFailure) {
    // The root cause first, whatever stopped the job after it; then what else happened.
    text += failureSummaryText(outcome, ranks, recorded);
    if (!outcome.consoleClosed.empty()) {
      text += fmt::format("hvdrun: the reader of its {} went away too (a broken pipe): the ranks' output after that "
                          "had nowhere to go\n", outcome.consoleClosed);
    } else if (outcome.interruptSignal != 0) {
      text += fmt::format("hvdrun: interrupted by {} too, while the job was ending\n", signalName(outcome.interruptSignal));
    }
  } else if (!outcome.consoleClosed.empty() && outcome.interruptSignal == SIGPIPE) {
    text += fmt::format("hvdrun: the reader of its {} went away (a broken pipe), so the ranks' output had nowhere "
                        "to go: stopped {} rank(s), as for SIGPIPE\n", outcome.consoleClosed, outcome.ranksStopped);
  } else if (outcome.interruptSignal != 0) {
    text += fmt::format("hvdrun: interrupted by {}; stopped {} rank(s)\n", signalName(outcome.interruptSignal),
                        outcome.ranksStopped);
  } else if (outcome.ranksStoppedAfterCoordinator > 0) {
    text += fmt::format("hvdrun: the chief finished (exit 0), so the job is done: stopped its {} parameter server, "
                        "worker and evaluator rank(s)\n", outcome.ranksStoppedAfterCoordinator);
  } else if (!outcome.consoleClosed.empty()) {
    text += fmt::format("hvdrun: the reader of its {} went away (a broken pipe) before all of the ranks' output "
                        "was written\n", outcome.consoleClosed);
  }
  return text;
}

void keepSummary(const std::string& outputDir, const std::string& text) {
  if (outputDir.empty() || text.empty()) return;
  if (!summaryIsOurs(outputDir)) {
    printTo(stderr, "hvdrun: warning: {} is not hvdrun's: left as it is, and this summary is on stderr only\n",
            summaryPath(outputDir));
    return;
  }
  std::ofstream out(summaryPath(outputDir), std::ios::trunc);
  out << text;
}

std::string incompleteOutputText(const JobOutcome& outcome, const std::string& outputDir) {
  std::string text;
  if (outcome.incompleteOutputFiles > 0) {
    text += fmt::format("hvdrun: error: {} of the ranks' output files in {} are incomplete ({})\n",
                        outcome.incompleteOutputFiles, outputDir, outcome.outputProblem);
    if (outcome.exitCode == 0) return text;  // the job's exit code says so: exit 3
  }
  if (!outcome.consoleProblem.empty()) {
    text += fmt::format("hvdrun: error: the ranks' output is incomplete ({})\n", outcome.consoleProblem);
  }
  return text;
}

}  // namespace hvd::cli
