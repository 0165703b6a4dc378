// runtime/api/default_runtime.cc: the process's one Runtime: made by init() (or made
// again, to rejoin the job), ended by shutdown(), swapped atomically so that calls from
// any thread see a whole Runtime or none, and kept from a child forked after init().
#include "runtime/api/default_runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "hvd/hvd.h"
#include "runtime/api/preemption.h"

namespace hvd::api {
namespace {

// C++20's atomic shared_ptr: the free std::atomic_load/store overloads it replaces are
// deprecated (and gone in C++26).
std::atomic<std::shared_ptr<Runtime>> defaultRuntime;
std::mutex initMutex;  // init() and shutdown() one at a time

std::atomic<bool> shutDown{false};  // shutdown() ended a runtime and no init() has made another
std::atomic<bool> joinedBefore{false};  // an init() of this process joined the job

Status notInitialized() {
  if (shutDown.load(std::memory_order_relaxed)) {
    return Status(Errc::kInvalidUsage, "the runtime was shut down (hvd.shutdown()) before this call")
        .withHint("make collectives before shutdown(), or call init() again to rejoin the job");
  }
  return Status(Errc::kInvalidUsage, "hvd::init() has not been called (or failed)");
}

// A process forked after init() (os.fork, a fork-started worker) inherits its parent's
// runtime: the same connections, shared memory and peers, but none of its threads. Its
// calls would pair with the peers' next ones in the parent's place (wrong sums, a hang),
// and its exit's shutdown() would negotiate over them too. So it keeps the identity
// (rank() and size() seed a DataLoader worker) and nothing else: set in the child by a
// pthread_atfork handler, to the parent's pid, while a runtime is live.
std::atomic<bool> runtimeLive{false};
std::atomic<int> forkedFrom{0};

void markForkedChild() {
  if (runtimeLive.load(std::memory_order_relaxed)) forkedFrom.store(static_cast<int>(::getppid()));
}

Status forkedAfterInit() {
  return Status(Errc::kInvalidUsage,
                "this process (pid " + std::to_string(::getpid()) + ") was forked from pid " +
                    std::to_string(forkedFrom.load()) +
                    " after hvd.init(); it shares that process's connections to the other ranks but none of its "
                    "threads, so its collectives are refused: make them in the process that called hvd.init() "
                    "(a forked worker may still read rank() and size())");
}

}  // namespace

std::shared_ptr<Runtime> current() { return defaultRuntime.load(); }

Result<std::shared_ptr<Runtime>> usable() {
  auto rt = current();
  if (!rt) return notInitialized();
  if (forkedFrom.load(std::memory_order_relaxed) != 0) return forkedAfterInit();
  return rt;
}

Result<std::shared_ptr<Runtime>> usable(int processSet) {
  auto rt = usable();
  if (!rt || processSet == 0) return rt;
  return processSets().runtimeFor(processSet, (*rt)->identity().rank);
}

bool forkedChild() { return forkedFrom.load(std::memory_order_relaxed) != 0; }

ProcessSetTable& processSets() {
  static ProcessSetTable table;
  return table;
}

std::mutex& processSetMutex() {
  static std::mutex adding;
  return adding;
}

Status inSet(Status s, int processSet) { return processSets().labelled(std::move(s), processSet); }

Result<int> rootInSet(int processSet, int root) {
  if (processSet == 0) return root;
  return processSets().rootIn(processSet, root);
}

}  // namespace hvd::api

namespace hvd {

using namespace api;  // the state above: this file's own
Status init() {
  // A stopped runtime runs nothing: rejoining is the one useful meaning of init() there.
  if (stopped()) shutdown();
  std::lock_guard<std::mutex> lock(initMutex);
  if (current()) return Status::ok();
  // Its own runtime would join the job as its parent's rank a second time.
  if (forkedChild()) return forkedAfterInit();
  // Every variable is read here, once, and checked: a malformed HVD_RANK is an error, not 0.
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status().withContext("reading the job's environment");
  HVD_RETURN_IF_ERROR(detail::checkPreemptionSettings(*env));
  auto runtime = Runtime::fromEnvironment(*env);
  if (!runtime && runtime.status().code() == Errc::kTimeout && joinedBefore.load()) {
    // A rejoin meets only the ranks that rejoin too: the one it waited for never did.
    return runtime.status().withHint(
        "this init() rejoins the job after shutdown() (or after a peer stopped the runtime): every rank must call "
        "init() again, and the rank named has not");
  }
  if (!runtime) return runtime.status();
  joinedBefore.store(true);
  detail::installPreemptionHandler(*env);
  defaultRuntime.store(std::shared_ptr<Runtime>(std::move(*runtime)));
  runtimeLive.store(true);
  shutDown.store(false);
  static std::once_flag forkHandler;
  std::call_once(forkHandler, [] { ::pthread_atfork(nullptr, nullptr, markForkedChild); });
  // A program that never calls shutdown() still leaves its launcher properly (mpirun
  // reports a rank that exits without PMIx_Finalize as a failure).
  static bool atExitRegistered = false;
  if (!atExitRegistered) atExitRegistered = std::atexit([] { shutdown(); }) == 0;
  return Status::ok();
}

void shutdown() {
  std::lock_guard<std::mutex> lock(initMutex);
  auto rt = defaultRuntime.exchange(std::shared_ptr<Runtime>());
  if (!rt) return;
  if (forkedChild()) {
    // The parent's runtime: its threads are not here and its connections are the parent's.
    // Left alone (leaked), as the process ends without a word to the peers.
    new std::shared_ptr<Runtime>(std::move(rt));
    return;
  }
  runtimeLive.store(false);
  shutDown.store(true);
  // The sets first: each one's members shut it down together, as the job's ranks do theirs.
  for (auto& [id, entry] : api::processSets().takeAll()) {
    if (entry.runtime) entry.runtime->shutdown();
  }
  rt->shutdown();
}

bool initialized() { return current() != nullptr; }
bool stopped() {
  auto rt = current();
  return rt && !forkedChild() && rt->engine().stopped();
}

}  // namespace hvd
