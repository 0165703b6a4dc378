// runtime/api/preemption.cc: a flag raised by a signal handler or by hvdrun's file.
// The handler only stores to a lock-free atomic, the one thing a handler may safely do.
#include "runtime/api/preemption.h"

#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "hvd/hvd.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd {
namespace {

std::atomic<bool> signalled{false};
// Set by init() from the registry; before init, preemptionRequested reads the variable
// itself (a program may ask before joining the job).
std::string preemptFile;
bool preemptFileKnown = false;
std::optional<EnvSnapshot> initEnvironment;
std::atomic<bool> seen{false};
bool reported = false;  // rank 0 told hvdrun (only the thread calling collectives touches it)
static_assert(std::atomic<bool>::is_always_lock_free);

void onPreemptSignal(int) { signalled.store(true, std::memory_order_relaxed); }

}  // namespace

namespace detail {

Status checkPreemptionSettings(const EnvSnapshot& env) {
  const std::string& name = env.text("HVD_PREEMPT_SIGNAL");
  if (name.empty() || name == "USR1" || name == "USR2") return Status::ok();
  return Status(Errc::kInvalidArgument, "HVD_PREEMPT_SIGNAL='" + name + "' is not a preemption signal")
      .withHint("hvdrun sets USR1 or USR2 (--signal); unset it to take no notice");
}

void installPreemptionHandler(const EnvSnapshot& env) {
  initEnvironment = env;
  preemptFile = env.text("HVD_PREEMPT_FILE");
  preemptFileKnown = true;
  const std::string& name = env.text("HVD_PREEMPT_SIGNAL");
  int sig = name == "USR1" ? SIGUSR1 : name == "USR2" ? SIGUSR2 : 0;
  if (sig == 0) return;
  struct sigaction current {};
  if (::sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;  // the program's own
  struct sigaction action {};
  action.sa_handler = onPreemptSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // the notice must not fail the rank's blocking calls
  ::sigaction(sig, &action, nullptr);
}

}  // namespace detail

bool preemptionRequested() {
  if (seen.load(std::memory_order_relaxed)) return true;
  bool now = signalled.load(std::memory_order_relaxed);
  if (!now) {
    if (!preemptFileKnown) {
      auto env = EnvSnapshot::fromProcess();
      preemptFile = env ? env->text("HVD_PREEMPT_FILE") : "";
      preemptFileKnown = true;
    }
    struct stat st {};
    now = !preemptFile.empty() && ::stat(preemptFile.c_str(), &st) == 0;
  }
  if (now) seen.store(true, std::memory_order_relaxed);
  return now;
}

Result<bool> preemptionAgreed() {
  int32_t flag = preemptionRequested() ? 1 : 0;
  HVD_RETURN_IF_ERROR(allreduce(&flag, 1, DataType::kInt32, ReduceOp::kMax));
  // hvdrun may not have heard the notice itself (it went to the ranks): tell it, so that
  // it can requeue the job. Best effort: the ranks' checkpoint matters more.
  if (flag != 0 && rank() == 0 && !reported && initEnvironment && initEnvironment->isSet("HVD_RENDEZVOUS_ADDR")) {
    reported = true;
    if (auto client = rendezvous::Client::fromEnvironment(*initEnvironment, std::chrono::seconds(5))) {
      (void)client->set(rendezvous::kPreemptedKey, "agreed by " + std::to_string(size()) + " rank(s)");
    }
  }
  return flag != 0;
}

}  // namespace hvd
