// runtime/engine/engine.cc: the engine's life and its callers' side: start and shutdown,
// submission and its checks, handles and waiting, and the thread that runs one cycle after
// another (engine_negotiation.cc says what a cycle does).
#include "runtime/engine/engine.h"

#include <algorithm>

#include "runtime/common/pause_clock.h"
#include "runtime/engine/engine_parts.h"

namespace hvd::engine {

using backends::TensorRef;

namespace {

// poll, wait and waitFor on a handle that is not (or no longer) pending.
Status notPending(HandleId handle) {
  return invalidArgument("handle " + std::to_string(handle) + " is not a pending request (already waited for?)");
}

// A rank with nothing pending that saw nothing happen backs off, doubling its interval up
// to this, so an idle job costs a few wake-ups a second instead of a thousand; a submission
// wakes it at once. Ranks waiting for it are paced by it in their control allreduce.
constexpr std::chrono::microseconds kMaxIdleInterval{20000};

}  // namespace

std::chrono::milliseconds stallCheckPeriod(const EngineOptions& o) {
  auto shortest = o.stallShutdown.count() > 0 ? std::min(o.stallWarning, o.stallShutdown) : o.stallWarning;
  return std::clamp(shortest / 4, std::chrono::milliseconds(100), std::chrono::milliseconds(10000));
}

Engine::Engine(int rank, int size, std::vector<std::unique_ptr<backends::CollectiveBackend>> backends, EngineOptions options)
    : rank_(rank),
      size_(size),
      options_(options),
      backends_(std::move(backends)),
      table_(size),
      cache_(options.cacheCapacity),
      joined_(static_cast<size_t>(size), false) {
  nextStallCheck_ = Clock::now() + stallCheckPeriod(options_);
}

Result<std::unique_ptr<Engine>> Engine::start(int rank, int size,
                                              std::vector<std::unique_ptr<backends::CollectiveBackend>> backends,
                                              EngineOptions options) {
  // The control path rides on the first backend that moves CPU tensors.
  auto cpu = std::find_if(backends.begin(), backends.end(), [](const auto& b) { return b->supports(Device::kCpu); });
  if (cpu == backends.end()) return invalidUsage("the engine needs a backend that moves CPU tensors");
  std::rotate(backends.begin(), cpu, cpu + 1);
  std::unique_ptr<Engine> engine(new Engine(rank, size, std::move(backends), options));
  // Every rank measures, timeline or not, so that ranks never disagree on the collectives.
  HVD_RETURN_IF_ERROR(engine->measureClockOffset(engine->clockOffsetUs_));
  if (!options.timelinePath.empty()) {
    HVD_RETURN_IF_ERROR(engine->openTimeline(options.timelinePath).withContext("HOROVOD_TIMELINE"));
  }
  engine->thread_ = std::thread([e = engine.get()] { e->threadMain(); });
  return engine;
}

Engine::~Engine() { shutdown(); }

// Why an Adasum request cannot run, or ok: Adasum is an allreduce of floating-point tensors,
// on a backend that has it (the CPU backends; GPU tensors only staged through them).
Status Engine::adasumRefusal(const Spec& spec) {
  if (spec.kind != OpKind::kAllreduce) {
    return invalidArgument(describe(spec) + ": only an allreduce takes Adasum, which combines whole tensors")
        .withHint("use sum or average");
  }
  if (!isFloatingPoint(spec.type)) {
    return invalidArgument("Adasum combines float16, bfloat16, float32 and float64 tensors, not " +
                           std::string(dataTypeName(spec.type)))
        .withHint("cast the tensor to a floating-point type, or use sum or average");
  }
  backends::CollectiveBackend* backend = backendFor(spec.device);
  if (backend != nullptr && !backend->hasAdasum()) {
    return Status(Errc::kInvalidUsage, "the " + std::string(backend->name()) + " backend has no Adasum")
        .withHint("hvd's own host backend and MPI's run it, GPU tensors through host memory");
  }
  return Status::ok();
}

Result<HandleId> Engine::submit(Submission s) {
  const Spec& spec = s.spec;
  // The C API's enums arrive as plain integers: anything else would index past every table.
  if (static_cast<unsigned>(spec.type) >= static_cast<unsigned>(kDataTypeCount)) {
    return invalidArgument("element type " + std::to_string(static_cast<int>(spec.type)) +
                           " is not one hvd knows (0 to " + std::to_string(kDataTypeCount - 1) + ", hvd_c.h)");
  }
  if (static_cast<unsigned>(spec.op) >= static_cast<unsigned>(kReduceOpCount)) {
    return invalidArgument("reduction " + std::to_string(static_cast<int>(spec.op)) + " is not one hvd knows (0 to " +
                           std::to_string(kReduceOpCount - 1) + ", hvd_c.h)");
  }
  if (spec.kind == OpKind::kAllreduce && spec.type == DataType::kBool && spec.op == ReduceOp::kAverage) {
    return Status(Errc::kInvalidArgument, "allreduce: an average of bool tensors is no bool")
        .withHint("use sum or max for 'any rank', min or product for 'every rank', or cast to a number to average");
  }
  if (spec.op == ReduceOp::kAdasum) {
    if (Status s = adasumRefusal(spec); !s.isOk()) return s;
  } else if ((spec.kind == OpKind::kAllreduce || spec.kind == OpKind::kReducescatter) && spec.count > 0) {
    // What the backend cannot reduce fails here, on every rank alike (the spec is the same
    // everywhere), and leaves the backend usable: run, it poisoned the backend for good.
    if (backends::CollectiveBackend* backend = backendFor(spec.device)) {
      if (Status s = backend->canReduce(spec.type, spec.op); !s.isOk()) return s;
    }
  }
  if (spec.kind == OpKind::kBroadcast && (spec.root < 0 || spec.root >= size_)) {
    return invalidArgument("broadcast root " + std::to_string(spec.root) + " is not a rank (the job has " +
                           std::to_string(size_) + ")");
  }
  if (spec.count > 0 && spec.kind != OpKind::kBarrier) {
    // A reducescatter's output may be empty (more ranks than rows): checked when it runs.
    bool needsIn = spec.kind == OpKind::kAllreduce || spec.kind == OpKind::kAllgather ||
                   spec.kind == OpKind::kReducescatter || spec.kind == OpKind::kAlltoall;
    bool needsOut = spec.kind == OpKind::kAllreduce || spec.kind == OpKind::kBroadcast;
    if ((needsIn && s.in == nullptr) || (needsOut && s.out == nullptr)) {
      return invalidArgument(describe(spec) + (s.name.empty() ? "" : " '" + s.name + "'") + " was given a null buffer");
    }
    if (spec.count > (std::uint64_t{1} << 62) / dataTypeSize(spec.type)) {
      return invalidArgument(std::to_string(spec.count) + " elements is more than any buffer can hold");
    }
  }
  if (spec.kind == OpKind::kReducescatter) {
    // Checked here, where a wrong size fails this call alone, not the collective it joins.
    if (spec.rows.elements == 0 ? spec.count != 0 : spec.count % spec.rows.elements != 0) {
      return invalidArgument(describe(spec) + " is not a whole number of rows of " +
                             std::to_string(spec.rows.elements) + " elements");
    }
    const std::uint64_t rows = spec.rows.elements == 0 ? 0 : spec.count / spec.rows.elements;
    const Share share = reducescatterShare(rows, rank_, size_);
    const std::uint64_t shareBytes = share.rows * spec.rows.elements * dataTypeSize(spec.type);
    if (s.outBytes != shareBytes || (shareBytes > 0 && s.out == nullptr)) {
      return invalidArgument(describe(spec) + ": rank " + std::to_string(rank_) + "'s share is " +
                             std::to_string(share.rows) + " of the " + std::to_string(rows) + " rows (" +
                             std::to_string(shareBytes) + " bytes), but the output buffer holds " +
                             std::to_string(s.out == nullptr ? 0 : s.outBytes) + " bytes");
    }
  }
  std::vector<std::uint64_t> sendCounts;
  if (spec.kind == OpKind::kAlltoall) {
    const std::uint64_t perRow = spec.rows.elements;
    if (perRow == 0 ? spec.count != 0 : spec.count % perRow != 0) {
      return invalidArgument(describe(spec) + " is not a whole number of rows of " + std::to_string(perRow) + " elements");
    }
    const std::uint64_t rows = perRow == 0 ? 0 : spec.count / perRow;
    std::vector<std::uint64_t> splits = s.splits;
    if (splits.empty()) {
      if (rows % static_cast<std::uint64_t>(size_) != 0) {
        return Status(Errc::kInvalidArgument, describe(spec) + ": " + std::to_string(rows) +
                                                  " rows do not split evenly over " + std::to_string(size_) + " ranks")
            .withHint("give splits: the rows for each rank, in rank order");
      }
      splits.assign(static_cast<size_t>(size_), rows / static_cast<std::uint64_t>(size_));
    }
    std::uint64_t total = 0;
    for (std::uint64_t n : splits) total += n;
    if (splits.size() != static_cast<size_t>(size_) || total != rows) {
      return invalidArgument(describe(spec) + ": splits give " + std::to_string(splits.size()) + " ranks " +
                             std::to_string(total) + " rows, but the job has " + std::to_string(size_) +
                             " ranks and the tensor " + std::to_string(rows) + " rows");
    }
    for (std::uint64_t n : splits) sendCounts.push_back(n * perRow);
  }
  auto op = std::make_shared<Operation>();
  op->name = std::move(s.name);
  op->spec = spec;
  op->sendCounts = std::move(sendCounts);
  op->in = s.in;
  op->out = s.out;
  op->outBytes = s.outBytes;
  return enqueue(std::move(op), s.waitedAtOnce);
}

Result<HandleId> Engine::submitJoin() {
  auto op = std::make_shared<Operation>();
  op->spec.kind = OpKind::kBarrier;  // for descriptions only: a join never runs as a request
  op->join = true;
  return enqueue(std::move(op), false);
}

Result<HandleId> Engine::enqueue(std::shared_ptr<Operation> op, bool waitedAtOnce) {
  op->submitted = Clock::now();
  op->pausedBefore = pausedSoFar();
  std::unique_lock<std::mutex> lock(queueMutex_);
  if (!stopped_.isOk()) {
    Status why = stopped_;
    lock.unlock();
    tellPeerGone();
    return why;
  }
  if (joinSubmitted_ && op->join) {
    return Status(Errc::kInvalidUsage, "join() was called again on this rank before the first returned")
        .withHint("call join() from one thread, once per round");
  }
  if (joinSubmitted_) {
    return Status(Errc::kInvalidUsage, describe(op->spec) + (op->name.empty() ? "" : " '" + op->name + "'") +
                                           " was submitted on a rank whose join() is pending")
        .withHint("a rank that called join() submits nothing until every rank joined and its join() returned");
  }
  if (!op->name.empty() && !activeNames_.insert(op->name).second) {
    return Status(Errc::kInvalidUsage, "tensor '" + op->name + "' was submitted again before its first submission finished")
        .withHint("wait for the first handle, or give each pending request its own name");
  }
  joinSubmitted_ = joinSubmitted_ || op->join;
  op->id = nextHandle_++;
  handles_[op->id] = op;
  incoming_.push_back(op);
  if (idle_.load(std::memory_order_relaxed) && !waitedAtOnce) {
    kick_ = true;
    wake_.notify_one();
  }
  return op->id;
}

Result<int> Engine::waitJoin(HandleId handle) {
  auto op = find(handle);
  if (!op) return notPending(handle);
  if (!op->join) return invalidUsage("handle " + std::to_string(handle) + " is not a join");
  waitFor(op);
  release(handle);
  if (!op->status.isOk()) return op->status;
  return op->lastJoined;
}

std::shared_ptr<Engine::Operation> Engine::find(HandleId handle) {
  std::lock_guard<std::mutex> lock(queueMutex_);
  auto it = handles_.find(handle);
  return it == handles_.end() ? nullptr : it->second;
}

void Engine::release(HandleId handle) {
  std::lock_guard<std::mutex> lock(queueMutex_);
  handles_.erase(handle);
}

Result<bool> Engine::poll(HandleId handle) {
  auto op = find(handle);
  if (!op) return notPending(handle);
  return op->done.load(std::memory_order_acquire);
}

Result<bool> Engine::waitFor(HandleId handle, std::chrono::milliseconds timeout) {
  auto op = find(handle);
  if (!op) return notPending(handle);
  return waitFor(op, std::chrono::duration_cast<Clock::duration>(timeout));
}

bool Engine::waitFor(const std::shared_ptr<Operation>& op, std::optional<Clock::duration> timeout) {
  // Drive cycles at once, for up to two cycle times: a blocking call made on every rank
  // then completes in this thread with no hand-off, even when a peer's first cycle came a
  // moment too early to include it. If the engine's thread is mid-cycle, have it run the
  // next one at once. After that, leave the pace to the engine's thread, so ranks waiting
  // for one that never submits do not spin through empty cycles.
  // The clock is first read after a cycle: a call done in its first one (every blocking
  // call that all ranks make together) reads none here (each read costs ~30 ns).
  std::optional<Clock::time_point> driveUntil, until;
  auto startClocks = [&] {
    Clock::time_point now = Clock::now();
    driveUntil = now + 2 * options_.cycleTime;
    if (timeout) until = now + *timeout;
  };
  while (!op->done.load(std::memory_order_acquire) && running_.load()) {
    if (driveUntil && Clock::now() >= *driveUntil) {
      kick();  // the thread may be backing off (blocking calls in a loop): it takes over now
      break;
    }
    if (until && Clock::now() >= *until) return op->done.load(std::memory_order_acquire);
    if (cycleMutex_.try_lock()) {
      runCycle(ControlWait::kAsData);
      cycleMutex_.unlock();
      if (!driveUntil && !op->done.load(std::memory_order_acquire)) startClocks();
      continue;
    }
    if (!driveUntil) startClocks();
    kick();
    std::unique_lock<std::mutex> lock(doneMutex_);
    done_.wait_for(lock, options_.cycleTime, [&] { return op->done.load(std::memory_order_acquire); });
  }
  if (timeout && !until) until = Clock::now() + *timeout;  // the engine stopped before a cycle
  std::unique_lock<std::mutex> lock(doneMutex_);
  while (!op->done.load(std::memory_order_acquire)) {
    Clock::duration step = std::chrono::milliseconds(100);
    if (until) {
      Clock::time_point now = Clock::now();
      if (now >= *until) return false;
      step = std::min(step, *until - now);
    }
    auto done = [&] { return op->done.load(std::memory_order_acquire); };
    sleepNoticingPause(step, [&] { return done_.wait_for(lock, step, done); });  // a stopped job (pause_clock.h)
  }
  return true;
}

Status Engine::wait(HandleId handle) {
  auto op = find(handle);
  if (!op) return notPending(handle);
  waitFor(op);
  release(handle);
  return op->status;
}

Result<Gathered> Engine::waitGathered(HandleId handle) {
  auto op = find(handle);
  if (!op) return notPending(handle);
  if (!sharesRows(op->spec.kind)) {
    return invalidUsage("handle " + std::to_string(handle) + " is not an allgather or alltoall");
  }
  waitFor(op);
  release(handle);
  if (!op->status.isOk()) return op->status;
  return std::move(op->gathered);
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    shutdownAsked_ = true;
  }
  while (running_.load()) {
    if (cycleMutex_.try_lock()) {
      runCycle(ControlWait::kBrief);
      cycleMutex_.unlock();
    } else {
      std::unique_lock<std::mutex> lock(doneMutex_);
      done_.wait_for(lock, options_.cycleTime);
    }
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Engine::threadMain() {
  auto interval = options_.cycleTime;
  auto next = Clock::now() + interval;
  while (running_.load()) {
    bool pendingHere = false, kicked = false;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      sleepNoticingPause(std::max(next - Clock::now(), Clock::duration::zero()), [&] {  // a stopped job (pause_clock.h)
        return wake_.wait_until(lock, next, [&] { return !running_.load() || kick_; });
      });
      kicked = kick_;
      kick_ = false;
      pendingHere = !incoming_.empty();
    }
    if (!running_.load()) break;
    // A caller drove a cycle since this thread last slept (blocking calls in a loop): let
    // it, and back off as when idle while nothing else is pending here. Waking every cycle
    // time only to find that took the core from a spinning rank: np=2 on 2 cores, 1,400
    // preemptions a second, and 64 KiB over TCP 35-38 us against 33 with the thread
    // quiet. A submission to wait for later, or a caller that stops driving, wakes it.
    auto lastStart = Clock::time_point(Clock::duration(lastCycleStart_.load(std::memory_order_relaxed)));
    if (!kicked && Clock::now() < lastStart + interval) {
      if (!pendingHere && !opsPending_.load(std::memory_order_relaxed)) {
        interval = std::min(interval * 2, kMaxIdleInterval);
        idle_.store(true, std::memory_order_relaxed);
      }
      next = lastStart + interval;
      continue;
    }
    bool progressed = false;
    if (cycleMutex_.try_lock()) {
      progressed = runCycle(ControlWait::kBrief);
      pendingHere = pendingHere || !named_.empty() || !unnamed_.empty() || join_;
      cycleMutex_.unlock();
    } else {
      pendingHere = true;  // a waiting thread is driving this cycle
    }
    interval = progressed || pendingHere ? options_.cycleTime : std::min(interval * 2, kMaxIdleInterval);
    if (joinedHere_.load(std::memory_order_relaxed)) interval = std::chrono::microseconds(0);
    idle_.store(interval > options_.cycleTime, std::memory_order_relaxed);
    next = Clock::now() + interval;
  }
}

bool Engine::runCycle(ControlWait wait) {
  if (!running_.load()) return false;
  followJobTimeline();
  cycleStart_ = Clock::now();
  lastCycleStart_.store(cycleStart_.time_since_epoch().count(), std::memory_order_relaxed);
  progressed_ = false;
  if (Status s = negotiateAndRun(wait); !s.isOk()) {
    std::optional<int> gone;
    for (const auto& backend : backends_) gone = gone ? gone : backend->peerGone();
    // This engine is done for; peers still in a collective with it learn so now (a failure
    // outside the transport, a GPU copy say, left them waiting for their timeout while this
    // process lived on). Where the transport failed it has told them already.
    for (const auto& backend : backends_) backend->abandon(s);
    stop(s, gone);
    progressed_ = true;
  }
  if (timeline_) {
    timelineUnwritten_ = timelineUnwritten_ || !events_.empty();
    if (!events_.empty()) timeline_->record(events_);
    // 10 ms with nothing to do (a step's compute, or waiting on a peer) is when to write:
    // a rank stopped by hvdrun's SIGTERM after a peer failed then still leaves its last
    // collectives in the trace, instead of losing up to the writer's 100 ms. Not at every
    // idle cycle: waking the writer several times a step showed in np=2's CPU time (5.43
    // against 4.71 ms per fused step in one A/B on 2 cores).
    auto now = Clock::now();
    if (progressed_) lastProgress_ = now;
    else if (timelineUnwritten_ && now - lastProgress_ >= std::chrono::milliseconds(10)) {
      timeline_->writeSoon();
      timelineUnwritten_ = false;
    }
  }
  opsPending_.store(!named_.empty() || !unnamed_.empty() || join_, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(doneMutex_);
  done_.notify_all();
  return progressed_;
}

void Engine::kick() {
  std::lock_guard<std::mutex> lock(queueMutex_);
  kick_ = true;
  wake_.notify_one();
}

void Engine::takeIncoming(bool& shutdownAsked) {
  std::vector<std::shared_ptr<Operation>> arrived;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    arrived.swap(incoming_);
    shutdownAsked = shutdownAsked_;
  }
  for (auto& op : arrived) {
    if (op->join) {
      join_ = op;
      continue;
    }
    op->track = trackFor(*op);
    if (timeline_ && !op->name.empty() && !earlyTicks_.empty()) {
      if (auto early = earlyTicks_.find(op->name); early != earlyTicks_.end()) {
        for (auto [r, when] : early->second) tick(*op, r, when);
        earlyTicks_.erase(early);
      }
    }
    if (op->name.empty()) unnamed_.push_back(op);
    else named_[op->name] = op;
  }
}

void Engine::complete(const std::shared_ptr<Operation>& op, Status status) {
  op->status = std::move(status);
  if (!op->name.empty()) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    activeNames_.erase(op->name);
  }
  op->done.store(true, std::memory_order_release);
}

bool Engine::stopped() const {
  std::lock_guard<std::mutex> lock(queueMutex_);
  return !stopped_.isOk();
}

void Engine::stop(const Status& why, std::optional<int> goneRank) {
  running_.store(false);
  std::vector<std::shared_ptr<Operation>> pending;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (stopped_.isOk()) stopped_ = why, goneRank_ = goneRank;
    pending.swap(incoming_);
    wake_.notify_all();
  }
  for (auto& [name, op] : named_) pending.push_back(op);
  for (auto& op : unnamed_) pending.push_back(op);
  if (join_) pending.push_back(join_);
  named_.clear();
  unnamed_.clear();
  join_.reset();
  // Before any caller hears of it: a rank may exit the moment its request fails.
  if (!pending.empty()) tellPeerGone();
  Status reason;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    reason = stopped_;
  }
  for (auto& op : pending) complete(op, reason);
}

// Only when a caller is about to see the failure: every rank's engine stops when the first
// rank shuts down at the end of a job, and that is no one's failure.
void Engine::tellPeerGone() {
  std::optional<int> gone;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    gone = goneRank_;
  }
  if (!gone || !options_.onPeerGone) return;
  std::call_once(goneTold_, [&] { options_.onPeerGone(*gone); });
}

}  // namespace hvd::engine
