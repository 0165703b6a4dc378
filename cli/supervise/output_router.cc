// cli/supervise/output_router.cc: prefixes, filters, files, and the batches for the console.
#include "cli/supervise/output_router.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cli/supervise/line_splitter.h"

namespace hvd::cli {
namespace {

// Ranks an elastic job adds get numbers past the job's first ranks; a launcher's label gone
// wrong may give any number. Prefixes of so many more are kept, the rest made per line.
constexpr size_t kMaxLaterPrefixes = 4096;

std::string timestampNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::snprintf(buf + n, sizeof buf - n, ".%03d", ms);
  return buf;
}

std::string makePrefix(int rank, bool isErr) { return '[' + std::to_string(rank) + (isErr ? "]<stderr>:" : "]<stdout>:"); }

}  // namespace

OutputRouter::OutputRouter(OutputSettings settings, Write write)
    : settings_(std::move(settings)), write_(std::move(write)) {}

OutputRouter::~OutputRouter() {
  for (auto& [key, fd] : files_) {
    if (fd >= 0) ::close(fd);
  }
}

void OutputRouter::line(size_t process, bool isErr, int rank, std::string_view text, char end, bool toConsole) {
  const bool labelled = rank >= 0;
  if (end == '\r' && text.empty()) return;  // the '\r' before a bar's first drawing
  // A redraw or an open piece is not remembered among the last stderr lines, which are for
  // the error.
  if (isErr && end != '\r' && end != LineSplitter::kOpenEnd) {
    // A host agent's own words stay its own: they explain that agent's end.
    const bool agentOwn = settings_.hostAgents && !labelled;
    const bool labelledOutput = settings_.launcherOutput || settings_.hostAgents;
    auto& last = labelledOutput && !agentOwn ? labelledStderr_[labelled ? rank : -1] : lastStderr_[process];
    last.emplace_back(text.substr(0, kRememberedLineLength));
    if (last.size() > kRememberedStderrLines) last.pop_front();
    if (!labelled) launcherMessages_.emplace_back(text);
  }
  if (!toConsole) return;
  if (!settings_.outputDir.empty() && labelled) writeToFile(rank, isErr, text, end);
  if (labelled && !settings_.consoleRanks.empty() && !settings_.consoleRanks.count(rank)) return;
  // A line given out open (a prompt) is continued by the rest of it, or ended before
  // anything else is written.
  const int fd = isErr ? STDERR_FILENO : STDOUT_FILENO;
  const bool continues =
      openLine_ && openLine_->process == process && openLine_->rank == rank && openLine_->isErr == isErr;
  if (!continues) endOpenLine();
  openLine_.reset();
  std::string& out = batchFor(fd);
  if (!continues && settings_.timestamps) out += timestampNow() + ' ';
  if (!continues && settings_.prefixOutput && labelled) out += prefixOf(rank, isErr);
  out += text;
  if (end == LineSplitter::kOpenEnd) {
    openLine_ = OpenLine{process, rank, isErr, fd};
  } else {
    out += end;
  }
}

void OutputRouter::own(int fd, std::string_view text) {
  if (text.empty()) return;
  endOpenLine();
  batchFor(fd) += text;
  flush();
}

void OutputRouter::streamEnded(size_t process, bool isErr) {
  // A prompt the stream ended on: the console's next words start a line of their own.
  if (openLine_ && openLine_->process == process && openLine_->isErr == isErr) endOpenLine();
  flush();
}

void OutputRouter::flush() {
  if (!batch_.empty()) write_(batchFd_, batch_);
  batch_.clear();
}

// The batch for fd, after handing over what was collected for the other one (their order
// is kept).
std::string& OutputRouter::batchFor(int fd) {
  if (fd != batchFd_) flush();
  batchFd_ = fd;
  return batch_;
}

// Ends the console line a piece left open, if any: other words must not run into it.
void OutputRouter::endOpenLine() {
  if (!openLine_) return;
  batchFor(openLine_->fd) += '\n';
  openLine_.reset();
}

const std::string& OutputRouter::prefixOf(int rank, bool isErr) {
  auto& prefixes = isErr ? errPrefixes_ : outPrefixes_;
  if (rank < settings_.rankCount) {
    if (rank >= static_cast<int>(prefixes.size())) prefixes.resize(static_cast<size_t>(rank) + 1);
    std::string& p = prefixes[static_cast<size_t>(rank)];
    if (p.empty()) p = makePrefix(rank, isErr);
    return p;
  }
  auto key = std::make_pair(rank, isErr);
  if (auto it = laterPrefixes_.find(key); it != laterPrefixes_.end()) return it->second;
  if (laterPrefixes_.size() < kMaxLaterPrefixes) return laterPrefixes_.emplace(key, makePrefix(rank, isErr)).first->second;
  uncachedPrefix_ = makePrefix(rank, isErr);
  return uncachedPrefix_;
}

void OutputRouter::createFiles(int rank) {
  if (settings_.outputDir.empty()) return;
  fileFor(rank, false);
  fileFor(rank, true);
}

std::deque<std::string> OutputRouter::lastStderr(size_t process) const {
  auto it = lastStderr_.find(process);
  return it != lastStderr_.end() ? it->second : std::deque<std::string>{};
}

// Appends the line to outputDir/rank.N/{stdout,stderr}, opening files on first use. A file
// that cannot be written is reported once; the job goes on.
void OutputRouter::writeToFile(int rank, bool isErr, std::string_view text, char end) {
  int fd = fileFor(rank, isErr);
  if (fd < 0) return;
  std::string bytes(text);
  if (end != LineSplitter::kOpenEnd) bytes += end;
  for (std::string_view data = bytes; !data.empty();) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // A full or failing file system: say so once for this file, and write no more there
      // (the rest would be missing from the middle, not only the end).
      reportFileProblem(settings_.outputDir + "/rank." + std::to_string(rank) + (isErr ? "/stderr" : "/stdout"),
                        "writing", errno);
      ::close(fd);
      files_[std::make_pair(rank, isErr)] = -1;
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputRouter::reportFileProblem(const std::string& path, const char* doing, int error, int files) {
  std::string what = std::string(doing) + " " + path + ": " + std::strerror(error);
  endOpenLine();
  batchFor(STDERR_FILENO) += "hvdrun: warning: " + what + "; that rank's output file" + (files > 1 ? "s are" : " is") +
                             " incomplete\n";
  if (fileProblem_.empty()) fileProblem_ = what;
  incompleteFiles_ += files;
}

// The file's descriptor, opened (truncated, or appended to) on first use; -1 when unwritable.
int OutputRouter::fileFor(int rank, bool isErr) {
  auto key = std::make_pair(rank, isErr);
  auto it = files_.find(key);
  if (it == files_.end()) {
    std::string dir = settings_.outputDir + "/rank." + std::to_string(rank);
    std::string path = dir + (isErr ? "/stderr" : "/stdout");
    int fd = -1;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      // mkdir's reason (EROFS), not the open's ENOENT; said once for both of the rank's
      // files, which share the directory.
      reportFileProblem(dir, "creating", errno, 2);
      files_.emplace(std::make_pair(rank, !isErr), -1);
    } else if ((fd = ::open(path.c_str(),
                            O_WRONLY | O_CREAT | O_CLOEXEC | (settings_.appendOutputFiles ? O_APPEND : O_TRUNC),
                            0644)) < 0) {
      reportFileProblem(path, "opening", errno);
    }
    it = files_.emplace(key, fd).first;
  }
  return it->second;
}

}  // namespace hvd::cli
