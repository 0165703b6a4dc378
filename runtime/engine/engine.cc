// runtime/engine/engine.cc: the cycle. Each cycle, on every rank in lockstep:
//  1. one control allreduce (agree) of the offer: shutdown, "I have new names", stall-check
//     wanted, the unnamed requests' count and hashes, one byte per cached response;
//  2. unnamed requests that every rank has, with agreeing hashes, become ready in order;
//     cached responses that every rank has pending become ready in slot order;
//  3. if anyone has new names, the announcements are allgathered and fed to every rank's
//     identical MessageTable; names now announced everywhere become ready (or fail with
//     the mismatch), and are cached;
//  4. the ready list is fused (fusion_plan.h) and run, in the same order everywhere.
// Steady state (every name cached) is therefore step 1 plus the data.
#include "runtime/engine/engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/backends/gather_bytes.h"
#include "runtime/common/log.h"
#include "runtime/common/pause_clock.h"
#include "runtime/engine/fusion_plan.h"
#include "runtime/engine/reduction_identity.h"
#include "runtime/engine/stall_inspector.h"
#include "runtime/engine/wire.h"

namespace hvd::engine {

using Clock = std::chrono::steady_clock;
using backends::TensorRef;

namespace {

// poll, wait and waitFor on a handle that is not (or no longer) pending.
Status notPending(HandleId handle) {
  return invalidArgument("handle " + std::to_string(handle) + " is not a pending request (already waited for?)");
}

}  // namespace

struct Engine::Operation {
  HandleId id = 0;
  std::string name;
  Spec spec;
  const void* in = nullptr;
  void* out = nullptr;
  std::uint64_t outBytes = 0;
  Clock::time_point submitted;
  Clock::duration pausedBefore{};  // pausedSoFar() at submission: a stall's age leaves pauses out
  Status status;  // written before done
  Gathered gathered;
  std::atomic<bool> done{false};
  bool announced = false;  // cycle state
  int track = -1;          // timeline track; -1 without a timeline
  double readyUs = 0;      // when negotiation decided it (timeline)
  std::vector<std::uint64_t> sendCounts;  // alltoall: elements to each rank
  bool join = false;       // a join(): lastJoined is its result
  int lastJoined = -1;
  std::vector<std::byte> standIn;  // a joined rank's stand-in: its buffer
};

namespace {



// A rank with nothing pending that saw nothing happen backs off, doubling its interval up
// to this, so an idle job costs a few wake-ups a second instead of a thousand; a submission
// wakes it at once. Ranks waiting for it are paced by it in their control allreduce.
constexpr std::chrono::microseconds kMaxIdleInterval{20000};

// Blocking allreduces up to this size ride in the control exchange (each step of which
// then moves them whole); larger ones run on their own, with the bandwidth-optimal
// algorithms.
constexpr std::uint64_t kMaxRiderBytes = 16 * 1024;

// A pending join() in stall reports: ranks that joined wait for the ones that never do.
constexpr const char* kJoinItem = "join()";

double toUs(Clock::time_point t) { return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count(); }

// Horovod's event names where the thing is the same.
const char* negotiateName(OpKind kind) {
  static const char* const kNames[] = {"NEGOTIATE_ALLREDUCE", "NEGOTIATE_BROADCAST", "NEGOTIATE_ALLGATHER",
                                       "NEGOTIATE_BARRIER", "NEGOTIATE_REDUCESCATTER", "NEGOTIATE_ALLTOALL"};
  return kNames[static_cast<int>(kind)];
}
const char* opName(OpKind kind) {
  static const char* const kNames[] = {"ALLREDUCE", "BROADCAST", "ALLGATHER", "BARRIER", "REDUCESCATTER", "ALLTOALL"};
  return kNames[static_cast<int>(kind)];
}
// The collective itself, named after what moved it: hvd's ring/pairwise algorithms over
// TCP and shared memory, Open MPI, or another backend; a reducescatter or alltoall the
// backend has no primitive for (runReducescatter, runAlltoall) by the allreduce or
// allgather it ran as.
const char* activityName(const backends::CollectiveBackend* backend, const Spec& spec) {
  static const char* const kRing[] = {"RING_ALLREDUCE", "RING_BROADCAST", "RING_ALLGATHER", "RING_BARRIER",
                                      "RING_REDUCESCATTER", "RING_ALLTOALL"};
  static const char* const kMpi[] = {"MPI_ALLREDUCE", "MPI_BCAST", "MPI_ALLGATHER", "MPI_BARRIER",
                                     "MPI_REDUCE_SCATTER", "MPI_ALLTOALLV"};
  static const char* const kOther[] = {"BACKEND_ALLREDUCE", "BACKEND_BROADCAST", "BACKEND_ALLGATHER",
                                       "BACKEND_BARRIER", "BACKEND_REDUCESCATTER", "BACKEND_ALLTOALL"};
  const std::string_view name = backend != nullptr ? backend->name() : "";
  if (spec.kind == OpKind::kAllreduce && spec.op == ReduceOp::kAdasum) {
    return name == "mpi" ? "MPI_ADASUM_ALLREDUCE" : name == "tcp" ? "ADASUM_ALLREDUCE" : "BACKEND_ADASUM_ALLREDUCE";
  }
  const char* const* table = name == "tcp" ? kRing : name == "mpi" ? kMpi : kOther;
  OpKind kind = spec.kind;
  if (kind == OpKind::kReducescatter && (backend == nullptr || !backend->hasReducescatter())) kind = OpKind::kAllreduce;
  if (kind == OpKind::kAlltoall && (backend == nullptr || !backend->hasAlltoall())) kind = OpKind::kAllgather;
  return table[static_cast<int>(kind)];
}

std::chrono::milliseconds stallCheckPeriod(const EngineOptions& o) {
  auto shortest = o.stallShutdown.count() > 0 ? std::min(o.stallWarning, o.stallShutdown) : o.stallWarning;
  return std::clamp(shortest / 4, std::chrono::milliseconds(100), std::chrono::milliseconds(10000));
}

}  // namespace

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

Status Engine::measureClockOffset(double& offsetUs) {
  backends::CollectiveBackend& control = *backends_.front();
  HVD_RETURN_IF_ERROR(control.barrier());
  double mine = timeline::TimelineWriter::nowUs();
  std::vector<double> all(static_cast<size_t>(size_));
  std::vector<size_t> eight(static_cast<size_t>(size_), sizeof mine);
  HVD_RETURN_IF_ERROR(control.allgatherv(TensorRef{&mine, sizeof mine, DataType::kUInt8, Device::kCpu}, eight, all.data()));
  offsetUs = all[0] - mine;
  return Status::ok();
}

Status Engine::openTimeline(const std::string& path) {
  timeline::WriterOptions w;
  w.path = path;
  w.rank = rank_;
  w.maxBytes = options_.timelineMaxBytes;
  w.clockOffsetUs = options_.sameClockAsRank0 ? 0.0 : clockOffsetUs_;
  w.offsetNote = options_.sameClockAsRank0
                     ? "none: this rank runs on rank 0's host and reads the same clock"
                     : "steady clock read by every rank right after a barrier at start-up; the offset is rank 0's "
                       "reading minus this rank's, so it is off by at most the barrier's exit skew";
  auto writer = timeline::TimelineWriter::open(std::move(w));
  if (!writer) return writer.status();
  timeline_ = std::move(*writer);
  timelinePath_ = path;
  tracks_.clear();  // the new file names its tracks afresh
  sharedTimeline_->publish(timeline_, options_.timelineMarkCycles);
  return Status::ok();
}

Status Engine::startTimeline(const std::string& path, bool markCycles) {
  std::lock_guard<std::mutex> cycle(cycleMutex_);
  if (timeline_) {
    if (path == timelinePath_) return Status::ok();
    return Status(Errc::kInvalidUsage, "a timeline is already being written to " + timelinePath_)
        .withHint("stop_timeline() first, then start the next");
  }
  options_.timelineMarkCycles = markCycles;  // before it is published to process sets
  return openTimeline(path);
}

void Engine::stopTimeline() {
  std::lock_guard<std::mutex> cycle(cycleMutex_);
  if (!timeline_) return;
  if (!events_.empty()) timeline_->record(events_);
  sharedTimeline_->publish(nullptr, false);
  // Written now: a process set's engine may hold the writer until its next cycle, which
  // then closes the file.
  timeline_->flush();
  timeline_.reset();
  timelinePath_.clear();
  forgetTracks();
}

void Engine::forgetTracks() {
  events_.clear();
  earlyTicks_.clear();
  tracks_.clear();
  timelineUnwritten_ = false;
  // Requests still pending name tracks of the closed file: a later one gets no spans of them.
  for (auto& [name, op] : named_) op->track = -1;
  for (auto& op : unnamed_) op->track = -1;
}

void Engine::followJobTimeline() {
  if (!options_.followTimeline || options_.followTimeline->generation() == followedGeneration_) return;
  timeline::SharedTimeline::View view = options_.followTimeline->current();
  followedGeneration_ = view.generation;
  if (timeline_ && !events_.empty()) timeline_->record(events_);
  forgetTracks();
  timeline_ = std::move(view.writer);
  options_.timelineMarkCycles = view.markCycles;
  if (timeline_) {
    timeline::Event name;  // the set's own track for its cycle marks
    name.phase = 'M';
    name.track = options_.timelineTrackBase;
    name.text = options_.timelineTrackPrefix + "(engine)";
    events_.push_back(std::move(name));
  }
}

int Engine::fusionTrack() {
  Operation named;
  named.name = "(fused allreduces: copies and the collective)";
  return trackFor(named);
}

int Engine::trackFor(const Operation& op) {
  if (!timeline_) return -1;
  static const std::string kBlocking = "(blocking calls, in order)";
  const std::string& key = op.name.empty() ? kBlocking : op.name;  // both lvalues: no copy per request
  auto it = tracks_.find(key);
  if (it != tracks_.end()) return it->second;
  // Track 0 (a process set's base): the engine's own marks.
  int track = options_.timelineTrackBase + static_cast<int>(tracks_.size()) + 1;
  tracks_.emplace(key, track);
  timeline::Event name;
  name.phase = 'M';
  name.track = track;
  name.text = options_.timelineTrackPrefix + key;
  events_.push_back(std::move(name));
  return track;
}

void Engine::tick(const Operation& op, int rank, double atUs) {
  if (!timeline_ || op.track < 0) return;
  timeline::Event e;
  e.phase = 'i';
  e.track = op.track;
  e.tsUs = atUs;
  // A process set's rank as the job's, which the trace's readers (hvdrun timeline) name.
  const auto& jobRanks = options_.timelineRanks;
  e.text = std::to_string(static_cast<size_t>(rank) < jobRanks.size() ? jobRanks[static_cast<size_t>(rank)] : rank);
  events_.push_back(std::move(e));
}

void Engine::span(const Operation& op, const char* name, double fromUs, double toUs, bool withArgs) {
  if (!timeline_ || op.track < 0) return;
  timeline::Event e;
  e.name = name;
  e.track = op.track;
  e.tsUs = fromUs;
  e.durUs = toUs - fromUs;
  if (withArgs) {
    e.dtype = static_cast<int>(op.spec.type);
    e.count = op.spec.count;
  }
  events_.push_back(std::move(e));
}

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

Status Engine::negotiateAndRun(ControlWait wait) {
  bool shutdownAsked = false;
  takeIncoming(shutdownAsked);
  ++tick_;
  if (timeline_ && options_.timelineMarkCycles) {
    timeline::Event mark;
    mark.phase = 'i';
    mark.track = options_.timelineTrackBase;
    mark.name = "CYCLE_START";
    mark.tsUs = timeline::TimelineWriter::nowUs();
    events_.push_back(std::move(mark));
  }
  const bool joinedHere = joined_[static_cast<size_t>(rank_)];
  ControlOffer offer;
  offer.shutdownRank = shutdownAsked ? rank_ : -1;
  offer.joined = joinedHere;
  offer.cached.assign(cache_.slots(), 0);
  std::vector<std::shared_ptr<Operation>> announcing;
  for (auto& [name, op] : named_) {
    if (op->announced) continue;
    auto slot = cache_.find(name);
    if (slot && cache_.matches(*slot, rank_, op->spec)) offer.cached[*slot] = 1;
    else announcing.push_back(op);
  }
  // A join goes out once nothing submitted before it is pending here.
  bool joining = join_ && !joinAnnounced_ && named_.empty() && unnamed_.empty();
  offer.hasAnnouncements = !announcing.empty() || joining;
  size_t unnamedOffered = std::min<size_t>(unnamed_.size(), 255);
  offer.unnamedCount = static_cast<unsigned>(unnamedOffered);
  if (unnamedOffered > 0) {
    offer.headHash = agreementHash(unnamed_[0]->spec);
    std::uint64_t h = agreementHash(Spec{}, 7);
    for (size_t i = 0; i < unnamedOffered; ++i) h = agreementHash(unnamed_[i]->spec, h);
    offer.allHash = h;
  }
  offer.wantsStallCheck = rank_ == 0 && options_.stallCheck && cycleStart_ >= nextStallCheck_;
  // The rider: every rank sends one of the last unnamed request's shape (so all agree on
  // its length without asking), holding this rank's first unnamed request when it has that
  // shape; its result counts only if every rank's did.
  backends::CollectiveBackend& control = *backends_.front();
  // Adasum combines whole tensors, which a control agreement's element-wise reduction cannot.
  bool riding = lastUnnamed_ && lastUnnamed_->kind == OpKind::kAllreduce && lastUnnamed_->device == Device::kCpu &&
                lastUnnamed_->op != ReduceOp::kAdasum &&
                lastUnnamed_->bytes() <= kMaxRiderBytes && control.carriesRiders();
  if (riding) {
    rider_.assign(lastUnnamed_->bytes(), std::byte{0});
    offer.riderHoldsHead = !unnamed_.empty() && unnamed_[0]->spec == *lastUnnamed_;
    if (offer.riderHoldsHead && !rider_.empty()) std::memcpy(rider_.data(), unnamed_[0]->in, rider_.size());
    // A joined rank's rider holds what changes no one's result (its "holds" byte is neutral).
    if (joinedHere) fillReductionIdentity(rider_.data(), lastUnnamed_->count, lastUnnamed_->type, lastUnnamed_->op);
  }
  std::vector<std::uint8_t> bytes = encodeOffer(offer);
  double agreeStartUs = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  HVD_RETURN_IF_ERROR(riding ? control.agree(bytes, {rider_.data(), lastUnnamed_->count, lastUnnamed_->type, lastUnnamed_->op}, wait)
                             : control.agree(bytes, wait));
  ControlAgreement agreed = decodeAgreement(bytes);

  if (agreed.stallCheck) {
    nextStallCheck_ = cycleStart_ + stallCheckPeriod(options_);
    HVD_RETURN_IF_ERROR(runStallCheck());
  }

  ReadyList ready;
  HVD_RETURN_IF_ERROR(takeUnnamed(agreed, riding, agreeStartUs, ready));
  for (size_t slot = 0; slot < agreed.cachedEverywhere.size(); ++slot) {
    if (!agreed.cachedEverywhere[slot]) continue;
    const Response* response = cache_.at(slot);
    if (response == nullptr) return internalError("the response cache disagrees between ranks at slot " + std::to_string(slot));
    Response run = *response;
    cache_.touch(slot, tick_);
    if (joinedHere) {
      ready.emplace_back(run, standIn(run));
      continue;
    }
    auto it = named_.find(response->name);
    if (it == named_.end()) return internalError("the response cache disagrees between ranks at slot " + std::to_string(slot));
    ready.emplace_back(std::move(run), it->second);
    named_.erase(it);
  }
  if (agreed.anyAnnouncements) {
    std::vector<Response> decided;
    HVD_RETURN_IF_ERROR(exchangeAnnouncements(announcing, joining, decided));
    for (Response& response : decided) {
      auto it = named_.find(response.name);
      std::shared_ptr<Operation> op;
      if (it != named_.end()) {
        op = it->second;
        named_.erase(it);
      } else if (!joined_[static_cast<size_t>(rank_)]) {
        return internalError("tensor '" + response.name + "' was decided but is not pending here");
      }
      if (!response.error.empty()) {
        if (op) complete(op, Status(Errc::kInvalidUsage, response.error));
        continue;
      }
      cache_.insert(response, tick_);
      if (!op) op = standIn(response);
      ready.emplace_back(std::move(response), op);
    }
  }
  if (joinedCount_ > 0) {
    // Every rank drops the same requests: what cannot run with ranks joined.
    std::erase_if(ready, [&](auto& entry) {
      Status refused = refusedWhileJoined(entry.first.spec);
      if (refused.isOk()) return false;
      if (!entry.first.name.empty()) refused = refused.withContext("tensor '" + entry.first.name + "'");
      if (entry.second->id != 0) complete(entry.second, refused);
      return true;
    });
  }
  if (timeline_) {
    double nowUs = timeline::TimelineWriter::nowUs();
    for (auto& [response, op] : ready) {
      op->readyUs = nowUs;
      span(*op, negotiateName(op->spec.kind), toUs(op->submitted), nowUs);
    }
  }
  progressed_ = !ready.empty() || agreed.anyAnnouncements || agreed.shutdownRank >= 0 || agreed.unnamedMin > 0;
  HVD_RETURN_IF_ERROR(execute(ready));
  if (joinedCount_ == size_) {
    // Every rank joined: each one's join returns, and the job goes on as before it. The
    // state is reset first: the caller may submit the moment its join is seen done.
    std::shared_ptr<Operation> joined = std::move(join_);
    join_.reset();
    joinAnnounced_ = false;
    joined_.assign(static_cast<size_t>(size_), false);
    joinedCount_ = 0;
    table_.clearJoined();
    joinedHere_.store(false, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(queueMutex_);
      joinSubmitted_ = false;
    }
    if (joined) {
      joined->lastJoined = lastJoined_;
      complete(joined, Status::ok());
    }
  }
  if (agreed.shutdownRank >= 0) {
    stop(agreed.shutdownRank == rank_
             ? Status(Errc::kInvalidUsage, "hvd was shut down on this rank while the request was pending")
             : Status(Errc::kRemote, "rank " + std::to_string(agreed.shutdownRank) +
                                         " shut hvd down (hvd.shutdown(), or its program ended), so no collective "
                                         "runs after it"),
         agreed.shutdownRank == rank_ ? std::nullopt : std::optional<int>(agreed.shutdownRank));
  }
  return Status::ok();
}

Status Engine::takeUnnamed(const ControlAgreement& agreed, bool riding, double agreeStartUs, ReadyList& ready) {
  // Unnamed requests, in order: all offered when every rank offered the same ones, else
  // the first; a first that disagrees fails on every rank with each rank's description.
  if (agreed.unnamedMin == 0) return Status::ok();
  size_t take = agreed.unnamedMin == agreed.unnamedMax && agreed.allAgree ? agreed.unnamedMin
                : agreed.headsAgree                                        ? 1
                                                                           : 0;
  std::optional<Spec> ranLast;
  const bool joinedHere = joined_[static_cast<size_t>(rank_)];
  if (take > 0 && riding && agreed.ridersHoldHeads && agreed.headsAgree && joinedHere) {
    ++unnamedRun_;  // the others' first one ran in the control exchange, with this rank's identity
    ranLast = lastUnnamed_;
    --take;
  } else if (take > 0 && riding && agreed.ridersHoldHeads && agreed.headsAgree) {
    // The first one already ran, in the control exchange.
    auto head = unnamed_.front();
    unnamed_.pop_front();
    ++unnamedRun_;
    if (!rider_.empty()) std::memcpy(head->out, rider_.data(), rider_.size());
    if (timeline_) {
      double nowUs = timeline::TimelineWriter::nowUs();
      span(*head, negotiateName(head->spec.kind), toUs(head->submitted), agreeStartUs);
      span(*head, opName(head->spec.kind), agreeStartUs, nowUs, true);
      span(*head, "RING_ALLREDUCE_WITH_NEGOTIATION", agreeStartUs, nowUs);
    }
    ranLast = head->spec;
    complete(head, Status::ok());
    --take;
  }
  if (take == 0 && !agreed.headsAgree) HVD_RETURN_IF_ERROR(failDisagreeingHead(joinedHere));
  std::vector<Spec> theirs;
  if (joinedCount_ > 0 && take > 0) HVD_RETURN_IF_ERROR(shareUnnamedSpecs(take, joinedHere, theirs));
  for (size_t i = 0; i < take; ++i) {
    if (joinedHere) {
      ++unnamedRun_;
      ranLast = theirs[i];
      Response response{"", theirs[i], {}, ""};
      ready.emplace_back(response, standIn(response));
      continue;
    }
    auto op = unnamed_.front();
    unnamed_.pop_front();
    ++unnamedRun_;
    ranLast = op->spec;
    ready.emplace_back(Response{"", op->spec, {}, ""}, op);
  }
  // Allreduce specs that ran agree on every rank (allgather shares need not): only they
  // shape the next rider.
  if (!agreed.headsAgree) lastUnnamed_.reset();
  if (ranLast) lastUnnamed_ = ranLast->kind == OpKind::kAllreduce ? ranLast : std::nullopt;
  return Status::ok();
}

Status Engine::failDisagreeingHead(bool joinedHere) {
  std::shared_ptr<Operation> head;
  WireWriter w;
  if (!joinedHere) {
    head = unnamed_.front();
    unnamed_.pop_front();
    w.spec(head->spec);
  }
  ++unnamedRun_;
  std::vector<std::vector<std::byte>> specs;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), specs));
  if (joinedHere) return Status::ok();
  MessageTable explain(size_);
  std::optional<Response> verdict;
  std::string name = "unnamed collective #" + std::to_string(unnamedRun_);
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) {
      explain.join(r);  // sent nothing
      continue;
    }
    WireReader reader(specs[static_cast<size_t>(r)]);
    Spec spec;
    if (!reader.spec(spec)) return internalError("rank " + std::to_string(r) + " sent a request this rank cannot read");
    verdict = explain.record(r, Announcement{name, spec});
  }
  std::string why = verdict && !verdict->error.empty() ? verdict->error : name + " disagrees between ranks";
  complete(head, Status(Errc::kInvalidUsage, why)
                     .withHint("calls without a name must be made in the same order on every rank; name them to "
                               "submit in any order"));
  return Status::ok();
}

Status Engine::shareUnnamedSpecs(size_t take, bool joinedHere, std::vector<Spec>& specs) {
  WireWriter w;
  if (!joinedHere) {
    w.u64(take);
    for (size_t i = 0; i < take; ++i) w.spec(unnamed_[i]->spec);
  }
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  if (!joinedHere) return Status::ok();
  // The specs agree (their hashes did), but for an allgather's share, which a joined rank
  // does not use: the first working rank's list serves.
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) continue;
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n) && n == take;
    for (std::uint64_t i = 0; ok && i < n; ++i) ok = reader.spec(specs.emplace_back());
    if (!ok || !reader.atEnd()) return internalError("rank " + std::to_string(r) + " sent specs this rank cannot read");
    return Status::ok();
  }
  return internalError("every rank joined, yet unnamed requests ran");
}

std::shared_ptr<Engine::Operation> Engine::standIn(const Response& response) {
  auto op = std::make_shared<Operation>();
  op->name = response.name;
  op->spec = response.spec;
  switch (op->spec.kind) {
    case OpKind::kAllreduce:
      op->standIn.resize(op->spec.bytes());
      fillReductionIdentity(op->standIn.data(), op->spec.count, op->spec.type, op->spec.op);
      op->in = op->out = op->standIn.data();
      break;
    case OpKind::kBroadcast:
    case OpKind::kAllgather:
    case OpKind::kAlltoall:  // refused while ranks have joined (refusedWhileJoined): never run
      op->spec.count = 0;
      op->sendCounts.assign(static_cast<size_t>(size_), 0);
      break;
    case OpKind::kBarrier:
      break;
    case OpKind::kReducescatter: {
      // The identity in, and room for this rank's rows (dropped).
      const std::uint64_t rows = op->spec.rows.elements == 0 ? 0 : op->spec.count / op->spec.rows.elements;
      op->outBytes = reducescatterShare(rows, rank_, size_).rows * op->spec.rows.elements * dataTypeSize(op->spec.type);
      op->standIn.resize(op->spec.bytes() + op->outBytes);
      fillReductionIdentity(op->standIn.data(), op->spec.count, op->spec.type, op->spec.op);
      op->in = op->standIn.data();
      op->out = op->standIn.data() + op->spec.bytes();
      break;
    }
  }
  return op;
}

Status Engine::refusedWhileJoined(const Spec& spec) const {
  std::vector<int> joined;
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) joined.push_back(r);
  }
  if (spec.kind == OpKind::kBroadcast && joined_[static_cast<size_t>(spec.root)]) {
    return Status(Errc::kInvalidUsage, describe(spec) + ": the root has called join(), so it has nothing to send")
        .withHint("broadcast before join()");
  }
  // Horovod's rule, which programs written for it expect: only reductions run beside joined
  // ranks. An allgather or a broadcast fails on the ranks still working (the joined ones
  // stay in join), as an alltoall must: a joined rank has nothing to send and nowhere to
  // keep what it is sent.
  if (spec.kind == OpKind::kBroadcast || spec.kind == OpKind::kAllgather || spec.kind == OpKind::kAlltoall) {
    const char* hint = spec.kind == OpKind::kAllgather
                           ? "gather before join(); DistributedOptimizer(sparse_as_dense=True) reduces sparse "
                             "gradients as dense ones, which runs beside joined ranks"
                           : "run it before join()";
    return Status(Errc::kUnavailable, describe(spec) + " ran while " + rankList(joined) +
                                          " had joined; only reductions run beside joined ranks, as in Horovod")
        .withHint(hint);
  }
  if (spec.device != Device::kCpu) {
    return Status(Errc::kUnavailable, describe(spec) + " ran while " + rankList(joined) +
                                          " had joined; join() takes part only in CPU tensors' collectives here")
        .withHint("reduce GPU tensors before join(), or copy them to the CPU for the last uneven steps");
  }
  return Status::ok();
}

void Engine::recordJoins(const std::vector<int>& ranks, std::vector<Response>& decided) {
  for (int r : ranks) {
    joined_[static_cast<size_t>(r)] = true;
    ++joinedCount_;
    lastJoined_ = r;
    for (Response& response : table_.join(r)) decided.push_back(std::move(response));
  }
  if (joined_[static_cast<size_t>(rank_)]) joinedHere_.store(joinedCount_ < size_, std::memory_order_relaxed);
}

Status Engine::exchangeAnnouncements(std::vector<std::shared_ptr<Operation>>& announcing, bool joining,
                                     std::vector<Response>& decided) {
  WireWriter w;
  w.u64(announcing.size());
  for (auto& op : announcing) {
    w.text(op->name);
    w.spec(op->spec);
    op->announced = true;
  }
  w.u64(joining ? 1 : 0);
  if (joining) joinAnnounced_ = true;
  std::vector<int> joiners;
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  for (int r = 0; r < size_; ++r) {
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n);
    for (std::uint64_t i = 0; ok && i < n; ++i) {
      Announcement a;
      ok = reader.text(a.name) && reader.spec(a.spec);
      if (!ok) break;
      // A rank announcing a cached name submitted it differently from the cached run:
      // every rank drops the entry, and the ranks that had it pending announce it next.
      cache_.erase(a.name);
      if (timeline_) {
        // Horovod's ticks under the negotiation bar: one per rank, when it was seen ready
        // (kept until this rank submits the name, if it has not yet).
        auto local = named_.find(a.name);
        double nowUs = timeline::TimelineWriter::nowUs();
        if (local != named_.end()) tick(*local->second, r, nowUs);
        else earlyTicks_[a.name].emplace_back(r, nowUs);
      }
      if (auto response = table_.record(r, a)) decided.push_back(std::move(*response));
    }
    std::uint64_t joins = 0;
    ok = ok && reader.u64(joins) && joins <= 1;
    if (!ok || !reader.atEnd()) return internalError("rank " + std::to_string(r) + " sent announcements this rank cannot read");
    if (joins == 1) joiners.push_back(r);
  }
  recordJoins(joiners, decided);
  return Status::ok();
}

Status Engine::runStallCheck() {
  auto now = Clock::now();
  const Clock::duration paused = pausedSoFar();
  // How long a request has waited while this process ran: a job held as a whole (Ctrl-Z,
  // scontrol suspend) past the stall times has not stalled.
  auto waited = [&](const Operation& op) {
    return std::chrono::duration<double>(now - op.submitted - (paused - op.pausedBefore)).count();
  };
  WireWriter w;
  std::vector<std::pair<std::string, double>> items;
  for (const auto& [name, op] : named_) items.emplace_back(name, waited(*op));
  for (size_t i = 0; i < unnamed_.size(); ++i) {
    items.emplace_back("unnamed collective #" + std::to_string(unnamedRun_ + i + 1), waited(*unnamed_[i]));
  }
  if (join_) items.emplace_back(kJoinItem, waited(*join_));
  w.u64(items.size());
  for (const auto& [name, waited] : items) {
    w.text(name);
    w.u64(static_cast<std::uint64_t>(waited * 1000));
  }
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  std::vector<PendingReport> reports(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n);
    for (std::uint64_t i = 0; ok && i < n; ++i) {
      PendingReport::Item item;
      std::uint64_t ms = 0;
      ok = reader.text(item.name) && reader.u64(ms);
      item.waitedSeconds = static_cast<double>(ms) / 1000.0;
      if (ok) reports[static_cast<size_t>(r)].items.push_back(std::move(item));
    }
    if (!ok) return internalError("rank " + std::to_string(r) + " sent a stall report this rank cannot read");
  }
  std::vector<StallFinding> findings = findStalls(reports);
  // A joined rank is not missing from the others' collectives: it takes part in them.
  if (joinedCount_ > 0) {
    for (auto& f : findings) {
      if (f.name == kJoinItem) continue;
      std::erase_if(f.missingRanks, [&](int r) { return joined_[static_cast<size_t>(r)]; });
    }
    std::erase_if(findings, [](const StallFinding& f) { return f.missingRanks.empty(); });
  }
  double warnAfter = std::chrono::duration<double>(options_.stallWarning).count();
  std::vector<StallFinding> fresh;
  for (const auto& f : findings) {
    if (f.waitedSeconds >= warnAfter && warnedStalls_.insert(f.name).second) fresh.push_back(f);
  }
  if (rank_ == 0 && !fresh.empty()) {
    const std::string context = options_.logContext.empty() ? "" : options_.logContext + ": ";
    logMessage(LogLevel::kWarning, context + formatStallWarning(fresh, warnAfter));
  }
  if (options_.stallShutdown.count() == 0) return Status::ok();
  double shutdownAfter = std::chrono::duration<double>(options_.stallShutdown).count();
  std::vector<StallFinding> fatal;
  for (const auto& f : findings) {
    if (f.waitedSeconds >= shutdownAfter) fatal.push_back(f);
  }
  if (fatal.empty()) return Status::ok();
  const StallFinding& f = fatal.front();
  Status stalled(Errc::kTimeout,
                 "collective '" + f.name + "' stalled: " + rankList(f.readyRanks) + " waited " +
                     std::to_string(static_cast<long long>(f.waitedSeconds)) + " s for " + rankList(f.missingRanks) +
                     ", which never submitted it (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=" +
                     std::to_string(static_cast<long long>(shutdownAfter)) + ")" +
                     (fatal.size() > 1 ? "; " + std::to_string(fatal.size() - 1) + " more stalled" : ""));
  stop(stalled);
  if (options_.exitOnStallShutdown) {
    const std::string context = options_.logContext.empty() ? "" : options_.logContext + ": ";
    logMessage(LogLevel::kError,
               context + stalled.message() + "; ending this rank with exit code " + std::to_string(kStallExitCode));
    std::_Exit(kStallExitCode);
  }
  return stalled;
}

backends::CollectiveBackend* Engine::backendFor(Device device) {
  for (auto& b : backends_) {
    if (b->supports(device)) return b.get();
  }
  return nullptr;
}

Status Engine::setGpuStream(void* stream) {
  std::lock_guard<std::mutex> cycle(cycleMutex_);
  backends::CollectiveBackend* gpu = backendFor(Device::kCuda);
  if (gpu == nullptr) return unavailable("no backend moves GPU tensors here");
  return gpu->useStream(stream);
}

Result<bool> Engine::waitForGpuStream(void* stream) {
  backends::CollectiveBackend* gpu = backendFor(Device::kCuda);
  return gpu == nullptr ? Result<bool>(false) : gpu->waitForStream(stream);
}

std::string_view Engine::backendName(Device device) const {
  for (const auto& b : backends_) {
    if (b->supports(device)) return b->name();
  }
  return "none";
}

Status Engine::execute(ReadyList& ready) {
  std::vector<Spec> specs;
  specs.reserve(ready.size());
  for (const auto& r : ready) specs.push_back(r.first.spec);
  std::vector<FusionGroup> groups = planFusion(specs, options_.fusionThresholdBytes);
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& members = groups[g].members;
    Status s;
    if (members.size() > 1) {
      s = ready[members[0]].first.spec.kind == OpKind::kReducescatter ? runReducescatterGroup(ready, members)
                                                                        : runAllreduceGroup(ready, members);
    } else {
      Operation& op = *ready[members[0]].second;
      double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
      s = runAlone(ready[members[0]].first, op);
      if (timeline_) {
        double t1 = timeline::TimelineWriter::nowUs();
        backends::CollectiveBackend* backend = backendFor(op.spec.device);
        if (t0 - op.readyUs > 1.0) span(op, "QUEUE", op.readyUs, t0);  // only when it waited
        span(op, opName(op.spec.kind), t0, t1, true);
        span(op, activityName(backend, op.spec), t0, t1);
      }
      complete(ready[members[0]].second, s);
    }
    if (!s.isOk()) {
      // The backend is poisoned now: what had not run fails with the same cause.
      for (size_t later = g + 1; later < groups.size(); ++later) {
        for (size_t m : groups[later].members) complete(ready[m].second, s);
      }
      return s;
    }
  }
  return Status::ok();
}

Status Engine::runAllreduceGroup(const ReadyList& ready,
                                 const std::vector<size_t>& members) {
  const Spec& first = ready[members[0]].first.spec;
  std::uint64_t total = 0;
  for (size_t m : members) total += ready[m].first.spec.bytes();
  backends::CollectiveBackend* backend = backendFor(first.device);
  if (backend == nullptr) {
    Status none = unavailable("no backend moves " + describe(first));
    for (size_t m : members) complete(ready[m].second, none);
    return none;
  }
  // Host tensors are packed here with memcpy; device tensors into the backend's own
  // device buffer with copies queued on its stream (ordered before its collective).
  bool onHost = first.device == Device::kCpu;
  std::byte* fused = nullptr;
  Status s;
  if (onHost) {
    if (fusionBuffer_.size() < total) fusionBuffer_.resize(total);
    fused = fusionBuffer_.data();
  } else if (auto scratch = backend->scratch(total, ready[members[0]].second->in); scratch) {
    fused = *scratch;
  } else {
    s = scratch.status();
  }
  // Every member's bytes into the fusion buffer (packing) or back out: memcpy on the host;
  // device tensors to the backend in one call (one kernel launch on a GPU).
  auto moveMembers = [&](bool packing) -> Status {
    std::vector<backends::DeviceCopy> copies;
    std::uint64_t at = 0;
    for (size_t m : members) {
      Operation& op = *ready[m].second;
      void* dst = packing ? static_cast<void*>(fused + at) : op.out;
      const void* src = packing ? op.in : fused + at;
      if (onHost) {
        std::memcpy(dst, src, op.spec.bytes());
      } else {
        copies.push_back({dst, src, op.spec.bytes()});
      }
      at += op.spec.bytes();
    }
    return onHost ? Status::ok() : backend->copyMany(copies);
  };
  double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) s = moveMembers(true);
  double t1 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) {
    const TensorRef whole{fused, total / dataTypeSize(first.type), first.type, first.device};
    if (first.op == ReduceOp::kAdasum) {
      // Each member keeps its own coefficients: the backend is told where each one ends.
      std::vector<size_t> counts;
      for (size_t m : members) counts.push_back(static_cast<size_t>(ready[m].first.spec.count));
      s = backend->adasum(whole, counts);
    } else {
      s = backend->allreduce(whole, first.op);
    }
  }
  double t2 = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  if (s.isOk()) s = moveMembers(false);
  if (s.isOk() && !onHost) s = backend->finishCopies();
  if (timeline_) {
    Spec whole = first;
    whole.count = total / dataTypeSize(first.type);
    spanFusedGroup(ready, members, whole, backend, t0, t1, t2);
  }
  for (size_t m : members) complete(ready[m].second, s);
  return s;
}

// Each member gets its operation (with its own args); the group's copies and its one
// collective go once on the fusion track, not once per member: a step of 1000 fused
// tensors otherwise wrote 6000 events. t0-t1 packed, t1-t2 the collective, then unpacked.
void Engine::spanFusedGroup(const ReadyList& ready, const std::vector<size_t>& members, const Spec& whole,
                            const backends::CollectiveBackend* backend, double t0, double t1, double t2) {
  double t3 = timeline::TimelineWriter::nowUs();
  for (size_t m : members) span(*ready[m].second, opName(whole.kind), t0, t3, true);
  Operation group;
  group.track = fusionTrack();
  group.spec = whole;
  span(group, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
  span(group, activityName(backend, whole), t1, t2, true);
  span(group, "MEMCPY_OUT_FUSION_BUFFER", t2, t3);
}

// Host reducescatters of one type and op (one, or a fused group): every member's part for
// rank 0, then every member's part for rank 1, ..., packed into the fusion buffer, so that
// one reduce-scatter (or, on a backend without one, one allreduce) gives each rank its parts
// of all of them. `total`: the elements packed; t1 and t2 (with a timeline): when the
// collective began and ended.
Status Engine::hostReducescatter(backends::CollectiveBackend& backend, const std::vector<Operation*>& ops,
                                 size_t& total, double& t1, double& t2) {
  const DataType type = ops[0]->spec.type;
  const ReduceOp op = ops[0]->spec.op;
  const size_t n = static_cast<size_t>(size_), me = static_cast<size_t>(rank_), width = dataTypeSize(type);
  // parts[i * n + r]: the elements of member i that rank r keeps; perRank[r]: all of rank r's.
  std::vector<size_t> parts(ops.size() * n), perRank(n, 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const Spec& spec = ops[i]->spec;
    const std::uint64_t rows = spec.rows.elements == 0 ? 0 : spec.count / spec.rows.elements;
    for (size_t r = 0; r < n; ++r) {
      parts[i * n + r] = reducescatterShare(rows, static_cast<int>(r), size_).rows * spec.rows.elements;
      perRank[r] += parts[i * n + r];
    }
  }
  size_t mineAt = 0;
  total = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == me) mineAt = total;
    total += perRank[r];
  }
  // The packed buffer, then room for this rank's result.
  if (fusionBuffer_.size() < (total + perRank[me]) * width) fusionBuffer_.resize((total + perRank[me]) * width);
  std::byte* fused = fusionBuffer_.data();
  std::vector<size_t> taken(ops.size(), 0);  // elements of each member packed so far
  size_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t count = parts[i * n + r];
      if (count > 0) std::memcpy(fused + at * width, static_cast<const std::byte*>(ops[i]->in) +
                                                         taken[i] * width, count * width);
      taken[i] += count, at += count;
    }
  }
  if (timeline_) t1 = timeline::TimelineWriter::nowUs();
  TensorRef all{fused, total, type, Device::kCpu};
  std::byte* mine = fused + total * width;
  Status s;
  if (total > 0 && backend.hasReducescatter()) {
    s = backend.reducescatter(all, perRank, op, mine);
  } else if (total > 0) {
    s = backend.allreduce(all, op);
    mine = fused + mineAt * width;
  }
  if (timeline_) t2 = timeline::TimelineWriter::nowUs();
  at = 0;
  for (size_t i = 0; i < ops.size() && s.isOk(); ++i) {
    const size_t count = parts[i * n + me];
    if (count > 0) std::memcpy(ops[i]->out, mine + at * width, count * width);
    at += count;
  }
  return s;
}

// A fused group of host reducescatters (hostReducescatter), with its timeline spans.
Status Engine::runReducescatterGroup(const ReadyList& ready, const std::vector<size_t>& members) {
  const Spec& first = ready[members[0]].first.spec;
  backends::CollectiveBackend* backend = backendFor(first.device);
  if (backend == nullptr) {
    Status none = unavailable("no backend moves " + describe(first));
    for (size_t m : members) complete(ready[m].second, none);
    return none;
  }
  double t0 = timeline_ ? timeline::TimelineWriter::nowUs() : 0, t1 = 0, t2 = 0;
  std::vector<Operation*> ops;
  for (size_t m : members) ops.push_back(ready[m].second.get());
  size_t total = 0;
  Status s = hostReducescatter(*backend, ops, total, t1, t2);
  if (timeline_) {
    Spec whole = first;
    whole.count = total;
    spanFusedGroup(ready, members, whole, backend, t0, t1, t2);
  }
  for (size_t m : members) complete(ready[m].second, s);
  return s;
}

Status Engine::runAlone(const Response& response, Operation& op) {
  const Spec& spec = op.spec;
  backends::CollectiveBackend* backend = backendFor(spec.device);
  if (backend == nullptr) return unavailable("no backend moves " + describe(spec));
  switch (spec.kind) {
    case OpKind::kAllreduce:
      if (op.in != op.out && spec.count > 0) {
        if (spec.device == Device::kCpu) {
          std::memmove(op.out, op.in, spec.bytes());
        } else {
          HVD_RETURN_IF_ERROR(backend->copy(op.out, op.in, spec.bytes()));
        }
      }
      if (spec.op == ReduceOp::kAdasum) {
        const size_t counts[] = {static_cast<size_t>(spec.count)};
        return backend->adasum(TensorRef{op.out, spec.count, spec.type, spec.device}, counts);
      }
      return backend->allreduce(TensorRef{op.out, spec.count, spec.type, spec.device}, spec.op);
    case OpKind::kBroadcast:
      return backend->broadcast(TensorRef{op.out, spec.count, spec.type, spec.device}, spec.root);
    case OpKind::kBarrier:
      return backend->barrier();
    case OpKind::kReducescatter:
      return runReducescatter(*backend, op);
    case OpKind::kAlltoall:
      return runAlltoall(*backend, op);
    case OpKind::kAllgather: {
      std::vector<std::uint64_t> counts = response.counts;
      if (counts.empty()) {  // unnamed: the shares are learnt now
        counts.resize(static_cast<size_t>(size_));
        std::uint64_t own = spec.count;
        std::vector<size_t> eight(static_cast<size_t>(size_), sizeof own);
        HVD_RETURN_IF_ERROR(backends_.front()->allgatherv(TensorRef{&own, sizeof own, DataType::kUInt8, Device::kCpu},
                                                          eight, counts.data()));
      }
      std::vector<size_t> bytesPerRank;
      size_t total = 0;
      for (auto c : counts) {
        bytesPerRank.push_back(static_cast<size_t>(c * dataTypeSize(spec.type)));
        total += bytesPerRank.back();
      }
      op.gathered.counts = counts;
      TensorRef mine{const_cast<void*>(op.in), spec.count, spec.type, spec.device};
      if (op.out != nullptr) {  // the caller's buffer, on the tensor's device
        if (total != op.outBytes) {
          return invalidUsage("allgather gathers " + std::to_string(total) + " bytes, but the output buffer holds " +
                              std::to_string(op.outBytes));
        }
        return backend->allgatherv(mine, bytesPerRank, op.out);
      }
      if (spec.device == Device::kCpu) {
        op.gathered.bytes.resize(total);
        return backend->allgatherv(mine, bytesPerRank, op.gathered.bytes.data());
      }
      // A GPU allgather without an output buffer gathers into device memory the backend
      // allocates now that the size is known, and hands it over: through host memory it
      // cost a pageable copy each way (64 MiB on an H200: 60 ms against 23 us on device).
      auto result = backend->allocate(total, spec.count > 0 ? op.in : nullptr);
      if (!result) return result.status();
      HVD_RETURN_IF_ERROR(backend->allgatherv(mine, bytesPerRank, result->memory.get()));
      HVD_RETURN_IF_ERROR(backend->finishCopies());
      op.gathered.device = spec.device;
      op.gathered.onDevice = std::move(*result);
      return Status::ok();
    }
  }
  return internalError("unknown request kind");
}

// The backend's own reduce-scatter where it has one (half an allreduce's traffic);
// otherwise an allreduce of the whole tensor of which this rank keeps its rows, at twice
// the traffic (docs/runtime.md says so).
Status Engine::runReducescatter(backends::CollectiveBackend& backend, Operation& op) {
  const Spec& spec = op.spec;
  if (spec.count == 0) return Status::ok();  // the same on every rank: the count was agreed
  if (spec.device == Device::kCpu) {
    size_t total = 0;
    double t1 = 0, t2 = 0;  // this op's spans come from runAlone's caller
    return hostReducescatter(backend, {&op}, total, t1, t2);
  }
  const std::uint64_t rows = spec.rows.elements == 0 ? 0 : spec.count / spec.rows.elements;
  if (backend.hasReducescatter()) {
    // A GPU tensor's rows are already in rank order: no packing, and the backend only reads it.
    std::vector<size_t> perRank;
    for (int r = 0; r < size_; ++r) perRank.push_back(reducescatterShare(rows, r, size_).rows * spec.rows.elements);
    return backend.reducescatter(TensorRef{const_cast<void*>(op.in), spec.count, spec.type, spec.device}, perRank,
                                 spec.op, op.out);
  }
  const Share share = reducescatterShare(rows, rank_, size_);
  const size_t width = spec.rows.elements * dataTypeSize(spec.type);
  const size_t shareBytes = share.rows * width;  // the output's size, checked at submission
  auto scratch = backend.scratch(spec.bytes(), op.in);
  if (!scratch) return scratch.status();
  HVD_RETURN_IF_ERROR(backend.copy(*scratch, op.in, spec.bytes()));
  HVD_RETURN_IF_ERROR(backend.allreduce(TensorRef{*scratch, spec.count, spec.type, spec.device}, spec.op));
  if (shareBytes > 0) HVD_RETURN_IF_ERROR(backend.copy(op.out, *scratch + share.firstRow * width, shareBytes));
  return backend.finishCopies();
}

// Every rank's send counts gathered first; then the backend's own alltoall where it has
// one, else (host tensors) every rank's whole buffer gathered, of which this rank keeps the
// rows each rank sent it, at size() times a pairwise exchange's traffic (docs/runtime.md
// says so). A GPU alltoall receives into device memory the backend allocates and hands it
// over, as a GPU allgather without an output buffer does.
Status Engine::runAlltoall(backends::CollectiveBackend& backend, Operation& op) {
  const Spec& spec = op.spec;
  if (spec.device != Device::kCpu && !backend.hasAlltoall()) {
    // Alike on every rank: the GPU backend is the job's choice, made at init.
    return unavailable(describe(spec) + ": the " + std::string(backend.name()) +
                       " backend has no alltoall for GPU tensors; copy the tensor to the CPU");
  }
  const size_t n = static_cast<size_t>(size_), width = dataTypeSize(spec.type);
  std::vector<std::uint64_t> matrix(n * n);  // [from * n + to]: elements
  std::vector<size_t> row(n, n * sizeof(std::uint64_t));
  HVD_RETURN_IF_ERROR(backends_.front()->allgatherv(
      TensorRef{op.sendCounts.data(), n * sizeof(std::uint64_t), DataType::kUInt8, Device::kCpu}, row, matrix.data()));
  const size_t me = static_cast<size_t>(rank_);
  if (backend.hasAlltoall()) {
    std::vector<size_t> bytesMatrix;
    size_t received = 0;
    op.gathered.counts.assign(n, 0);
    for (size_t k = 0; k < n * n; ++k) bytesMatrix.push_back(static_cast<size_t>(matrix[k]) * width);
    for (size_t k = 0; k < n; ++k) op.gathered.counts[k] = matrix[k * n + me], received += bytesMatrix[k * n + me];
    TensorRef send{const_cast<void*>(op.in), spec.count, spec.type, spec.device};
    if (spec.device == Device::kCpu) {
      op.gathered.bytes.resize(received);
      return backend.alltoallv(send, bytesMatrix, op.gathered.bytes.data());
    }
    auto result = backend.allocate(received, spec.count > 0 ? op.in : nullptr);
    if (!result) return result.status();
    HVD_RETURN_IF_ERROR(backend.alltoallv(send, bytesMatrix, result->memory.get()));
    HVD_RETURN_IF_ERROR(backend.finishCopies());
    op.gathered.device = spec.device;
    op.gathered.onDevice = std::move(*result);
    return Status::ok();
  }
  std::vector<size_t> bytesPerRank(n);
  size_t total = 0;
  for (size_t k = 0; k < n; ++k) {
    std::uint64_t sent = 0;
    for (size_t d = 0; d < n; ++d) sent += matrix[k * n + d];
    bytesPerRank[k] = static_cast<size_t>(sent) * width;
    total += bytesPerRank[k];
  }
  std::vector<std::byte> all(total);
  HVD_RETURN_IF_ERROR(backend.allgatherv(TensorRef{const_cast<void*>(op.in), spec.count, spec.type, spec.device},
                                         bytesPerRank, all.data()));
  op.gathered.counts.assign(n, 0);
  size_t received = 0;
  for (size_t k = 0; k < n; ++k) received += static_cast<size_t>(matrix[k * n + me]) * width;
  op.gathered.bytes.resize(received);
  size_t blockStart = 0, at = 0;
  for (size_t k = 0; k < n; ++k) {
    std::uint64_t before = 0;  // what rank k sends the ranks below this one, ahead of this one's rows
    for (size_t d = 0; d < me; ++d) before += matrix[k * n + d];
    const size_t bytes = static_cast<size_t>(matrix[k * n + me]) * width;
    if (bytes > 0) std::memcpy(op.gathered.bytes.data() + at, all.data() + blockStart + before * width, bytes);
    op.gathered.counts[k] = matrix[k * n + me];
    at += bytes;
    blockStart += bytesPerRank[k];
  }
  return Status::ok();
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
