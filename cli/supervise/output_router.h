// cli/supervise/output_router.h: where each line a supervised process writes goes: the
// console (prefixed "[rank]<stdout>:", timestamped, filtered by --ranks-filter), the
// rank's files under --output-filename, and the last stderr lines a failure report quotes.
// Lines of different ranks never interleave: each goes to the console whole, collected per
// read and handed over together. Fed lines, it writes through a function it is given, so it
// is tested without pipes or processes. Single-threaded: the supervisor's loop calls it.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::cli {

struct OutputSettings {
  bool prefixOutput = true;  // "[rank]<stdout>:" before every rank's line
  bool timestamps = false;   // console lines begin with the local time, to the millisecond
  std::set<int> consoleRanks;  // only these ranks on the console; empty: all
  // Every rank's lines also go to outputDir/rank.N/stdout and stderr; empty: no files.
  std::string outputDir;
  bool appendOutputFiles = false;  // add to the files instead of starting them afresh
  int rankCount = 0;               // the job's ranks, 0 .. rankCount-1
  // A launcher's unlabelled stderr lines are its own words, remembered apart (-1) beside
  // each rank's; a host agent's own words stay that agent's (they explain its end).
  bool launcherOutput = false;
  bool hostAgents = false;
};

class OutputRouter {
 public:
  // Hands text (whole lines) to the console's fd (1 or 2); never blocks.
  using Write = std::function<void(int fd, std::string_view text)>;

  OutputRouter(OutputSettings settings, Write write);
  ~OutputRouter();
  OutputRouter(const OutputRouter&) = delete;
  OutputRouter& operator=(const OutputRouter&) = delete;

  // A line that process `process` (an index of the caller's) wrote on stderr (isErr) or
  // stdout. rank: whose it is (-1: the process's own words, printed without a prefix);
  // end: '\n', '\r' for a progress bar's redraw, or LineSplitter::kOpenEnd for the beginning
  // of a line whose rest comes later (a prompt). toConsole false: only remembered (a host
  // agent's words before it said hello, which the hosts' table reports instead).
  void line(size_t process, bool isErr, int rank, std::string_view text, char end, bool toConsole = true);
  // hvdrun's own words (a warning, a host agent's records) on fd, after the lines so far.
  void own(int fd, std::string_view text);
  // The stream ended: a line it left open is ended, so that other words start a line.
  void streamEnded(size_t process, bool isErr);
  // Hands what was collected to the console.
  void flush();

  // Opens rank's two files now, so that a silent rank has empty files rather than none.
  void createFiles(int rank);

  // A process's last stderr lines (its own, for processes that are ranks or host agents).
  std::deque<std::string> lastStderr(size_t process) const;
  // Labelled output: each rank's last stderr lines (-1: the launcher's own).
  const std::map<int, std::deque<std::string>>& labelledStderr() const { return labelledStderr_; }
  // A launcher's own stderr lines, all of them, in order.
  const std::vector<std::string>& launcherMessages() const { return launcherMessages_; }
  // Output files that could not be created or written to the end, and the first reason.
  int incompleteFiles() const { return incompleteFiles_; }
  const std::string& fileProblem() const { return fileProblem_; }

  static constexpr size_t kRememberedStderrLines = 10;
  static constexpr size_t kRememberedLineLength = 500;

 private:
  std::string& batchFor(int fd);
  void endOpenLine();
  const std::string& prefixOf(int rank, bool isErr);
  void writeToFile(int rank, bool isErr, std::string_view text, char end);
  void reportFileProblem(const std::string& path, const char* doing, int error, int files = 1);
  int fileFor(int rank, bool isErr);

  OutputSettings settings_;
  Write write_;
  std::string batch_;  // lines for batchFd_ not yet handed to the console
  int batchFd_ = 1;
  // The console line a piece left open (a prompt), and whose it is.
  struct OpenLine {
    size_t process;
    int rank;  // the line's label (a launcher's own words: -1)
    bool isErr;
    int fd;
  };
  std::optional<OpenLine> openLine_;
  // "[N]<stdout>:" and "[N]<stderr>:", made once per rank: building them per line cost a
  // fifth of hvdrun's time when ranks write fast.
  std::vector<std::string> outPrefixes_, errPrefixes_;
  std::map<std::pair<int, bool>, std::string> laterPrefixes_;  // ranks past rankCount (elastic growth)
  std::string uncachedPrefix_;
  std::map<size_t, std::deque<std::string>> lastStderr_;    // by process
  std::map<int, std::deque<std::string>> labelledStderr_;   // by rank; -1: the launcher's own
  std::vector<std::string> launcherMessages_;
  std::map<std::pair<int, bool>, int> files_;  // (rank, stderr?) -> fd; -1 when unwritable
  int incompleteFiles_ = 0;
  std::string fileProblem_;
};

}  // namespace hvd::cli
