// cli/job/preemption.cc: the flag's file and the requeue.
#include "cli/job/preemption.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/os/console.h"
#include "cli/os/subprocess.h"
#include "cli/supervise/rank_failure.h"
#include "cli/user_error.h"
#include "runtime/common/hex.h"

namespace hvd::cli {

PreemptionFlag::PreemptionFlag(const Options& o, const slurm::Environment& env) : signal_(o.preemptSignal) {
  auto jobId = slurm::lookup(env, "SLURM_JOB_ID");
  auto submitDir = slurm::lookup(env, "SLURM_SUBMIT_DIR");
  // Unpredictable names: a flag another user can create or plant a symlink at would make the
  // job checkpoint and stop, or hvdrun write through the link.
  auto random = randomHex(8);
  if (!random) throw UserError(ExitCode::kEnvironment, random.status().message());
  if (jobId && submitDir && !submitDir->empty()) {
    path_ = std::string(*submitDir) + "/.hvdrun-preempt-" + std::string(*jobId) + "-" + *random;
  } else {
    // Outside Slurm, in a directory only this user may enter, made when the notice comes:
    // a job that is never preempted leaves nothing behind, even when hvdrun is SIGKILLed.
    const char* tmp = std::getenv("TMPDIR");
    const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    if (::access(base.c_str(), W_OK | X_OK) != 0) {
      throw UserError(ExitCode::kEnvironment,
                      fmt::format("cannot create a private directory for the preemption flag in {}: {}", base,
                                  std::strerror(errno)),
                      "set TMPDIR to a writable directory");
    }
    privateDir_ = base + "/hvdrun-" + *random;
    path_ = privateDir_ + "/preempt";
  }
}

PreemptionFlag::~PreemptionFlag() {
  std::remove(path_.c_str());
  if (madeDir_) ::rmdir(privateDir_.c_str());
}

// The private directory, made now (0700); one already there must be a directory of this
// user's that no one else may enter (the name is random and only the ranks know it).
bool PreemptionFlag::makePrivateDir() const {
  if (::mkdir(privateDir_.c_str(), 0700) == 0) {
    madeDir_ = true;
    return true;
  }
  struct stat dir {};
  if (errno != EEXIST || ::lstat(privateDir_.c_str(), &dir) != 0) return false;
  if (!S_ISDIR(dir.st_mode) || dir.st_uid != ::geteuid() || (dir.st_mode & 077) != 0) {
    errno = EPERM;
    return false;
  }
  return true;
}

int PreemptionFlag::signalNumber() const { return signal_ == "USR1" ? SIGUSR1 : SIGUSR2; }

void PreemptionFlag::raise() const {
  if (!privateDir_.empty() && !makePrivateDir()) {
    printTo(stderr, "hvdrun: warning: cannot create the preemption flag's directory {}: {}; ranks still get SIG{}\n",
            privateDir_, std::strerror(errno), signal_);
    return;
  }
  // O_EXCL|O_NOFOLLOW: never through a link, never into a file someone else made.
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "w");
  if (f == nullptr) {
    if (fd >= 0) ::close(fd);
    printTo(stderr, "hvdrun: warning: cannot create the preemption flag {}: {}; ranks still get SIG{}\n", path_,
            std::strerror(errno), signal_);
    return;
  }
  printTo(f, "SIG{} at {}\n", signal_, nowIso8601());
  std::fclose(f);
}

void finishPreemption(const Options& o, const JobOutcome& outcome, bool toldByRanks, const slurm::Environment& env) {
  if (!outcome.preempted) return;
  if (toldByRanks) {
    printTo(stderr, "hvdrun: the ranks agreed on a preemption notice sent to them directly\n");
  } else {
    printTo(stderr, "hvdrun: preemption notice (SIG{}) passed to every rank{}\n", o.preemptSignal,
               outcome.ranksStoppedAfterPreemption > 0
                   ? fmt::format("; ranks still running {} s later (--preempt-grace) were stopped",
                                 std::chrono::duration_cast<std::chrono::seconds>(o.preemptGrace).count())
                   : "");
  }
  if (!o.requeue) return;
  auto jobId = slurm::lookup(env, "SLURM_JOB_ID");
  if (!jobId) {
    printTo(stderr, "hvdrun: warning: --requeue: not inside a Slurm job, nothing to requeue\n");
    return;
  }
  // Said before: the requeue ends this batch script, hvdrun with it, often before scontrol
  // has returned (the line said afterwards was missing in 1 of 5 runs of the cluster suite).
  printTo(stderr, "hvdrun: requeueing job {} (scontrol requeue)\n", *jobId);
  std::fflush(stderr);
  RunOptions options;
  options.timeout = std::chrono::seconds(60);
  auto run = runAndCapture({"scontrol", "requeue", std::string(*jobId)}, options);
  if (!run.isOk() || !run->succeeded()) {
    std::string why = run.isOk() ? run->err : run.status().message();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw UserError(ExitCode::kEnvironment, "--requeue: scontrol requeue " + std::string(*jobId) + " failed: " + why,
                    "the job may not be requeueable (sbatch --requeue, JobRequeue in slurm.conf)");
  }
}

}  // namespace hvd::cli
