// cli/os/console_writer.cc: one queue of (fd, text) runs, one thread writing them.
#include "cli/os/console_writer.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hvd::cli {
namespace {

// Queued text for one fd; consecutive writes to the same fd share a run.
struct Run {
  int fd;
  std::string text;
};

constexpr size_t kRunLimit = size_t{1} << 20;  // a new run after this much, so the thread starts sooner

// How much of text to hand to one write(): whole lines up to PIPE_BUF bytes (atomic on a
// pipe), or one longer line whole.
size_t pieceLength(std::string_view text) {
  if (text.size() <= PIPE_BUF) return text.size();
  const void* nl = ::memrchr(text.data(), '\n', PIPE_BUF);
  if (nl != nullptr) return static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  size_t end = text.find('\n', PIPE_BUF);
  return end == std::string_view::npos ? text.size() : end + 1;
}

}  // namespace

struct ConsoleWriter::Shared {
  std::mutex mutex;
  std::condition_variable work;
  std::deque<Run> runs;
  size_t queued = 0;   // bytes in runs and in the thread's hands: 0 is drained
  bool stopping = false;
  std::vector<int> dead;  // fds whose writes failed
  std::vector<Failure> failures;  // not taken yet
  int writing = -1;                       // the fd of the run the thread is writing
  int wake = -1;
  int failed = -1;  // eventfd: readable while failures are not taken
  size_t capacity = 0;

  ~Shared() {
    if (wake >= 0) ::close(wake);
    if (failed >= 0) ::close(failed);
  }

  bool isDead(int fd) const { return std::find(dead.begin(), dead.end(), fd) != dead.end(); }

  // Writes one run; returns how many of its bytes were dropped (its fd failed).
  size_t writeRun(const Run& run) {
    std::string_view text = run.text;
    while (!text.empty()) {
      {
        std::lock_guard lock(mutex);
        if (isDead(run.fd)) return text.size();
      }
      size_t length = pieceLength(text);
      for (std::string_view piece = text.substr(0, length); !piece.empty();) {
        ssize_t n = ::write(run.fd, piece.data(), piece.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          int error = errno;
          std::lock_guard lock(mutex);
          dead.push_back(run.fd);  // EPIPE, EIO, ENOSPC: the rest would not arrive either
          failures.push_back(Failure{run.fd, error});
          uint64_t one = 1;
          (void)!::write(failed, &one, sizeof one);
          return text.size();
        }
        piece.remove_prefix(static_cast<size_t>(n));
      }
      text.remove_prefix(length);
      std::lock_guard lock(mutex);
      queued -= length;
    }
    return 0;
  }

  void serve() {
    std::unique_lock lock(mutex);
    while (true) {
      work.wait(lock, [&] { return !runs.empty() || stopping; });
      if (runs.empty()) return;  // stopping, with nothing left
      std::deque<Run> mine;
      mine.swap(runs);
      lock.unlock();
      for (const Run& run : mine) {
        {
          std::lock_guard relock(mutex);
          writing = run.fd;
        }
        size_t dropped = writeRun(run);
        std::lock_guard relock(mutex);
        writing = -1;
        queued -= dropped;
        uint64_t one = 1;
        (void)!::write(wake, &one, sizeof one);  // room again, or drained
      }
      lock.lock();
    }
  }
};

ConsoleWriter::ConsoleWriter(size_t capacity) : shared_(std::make_shared<Shared>()) {
  shared_->capacity = capacity;
  shared_->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  shared_->failed = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // The thread owns a reference: a console that never reads again keeps it blocked in
  // write() after this object is gone, harmlessly, until the process exits. It takes no
  // signals (it is started with all blocked): hvdrun reads its own from a signalfd, which
  // sees only signals that no thread would take.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([shared = shared_] { shared->serve(); }).detach();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ConsoleWriter::~ConsoleWriter() {
  std::lock_guard lock(shared_->mutex);
  shared_->stopping = true;
  shared_->work.notify_one();
}

void ConsoleWriter::write(int fd, std::string_view text) {
  if (text.empty()) return;
  std::lock_guard lock(shared_->mutex);
  if (fd < 0 || shared_->isDead(fd)) return;
  auto& runs = shared_->runs;
  if (runs.empty() || runs.back().fd != fd || runs.back().text.size() >= kRunLimit) runs.push_back(Run{fd, {}});
  runs.back().text.append(text);
  shared_->queued += text.size();
  shared_->work.notify_one();
}

bool ConsoleWriter::full() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->queued >= shared_->capacity;
}

int ConsoleWriter::wakeFd() const { return shared_->wake; }

void ConsoleWriter::clearWake() {
  uint64_t count = 0;
  (void)!::read(shared_->wake, &count, sizeof count);
}

int ConsoleWriter::stalledFd() const {
  std::lock_guard lock(shared_->mutex);
  if (shared_->writing >= 0) return shared_->writing;
  return shared_->runs.empty() ? -1 : shared_->runs.front().fd;
}

int ConsoleWriter::failureFd() const { return shared_->failed; }

std::vector<ConsoleWriter::Failure> ConsoleWriter::takeFailures() {
  uint64_t count = 0;
  (void)!::read(shared_->failed, &count, sizeof count);
  std::lock_guard lock(shared_->mutex);
  std::vector<Failure> taken;
  taken.swap(shared_->failures);
  return taken;
}

bool ConsoleWriter::drained() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->queued == 0;
}

}  // namespace hvd::cli
