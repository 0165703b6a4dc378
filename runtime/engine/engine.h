// runtime/engine/engine.h: asynchronous named collectives. Any thread submits a request and
// gets a handle; a background thread runs cycles in which the ranks agree on what is
// ready everywhere (a cached request costs one byte on the control path; a new name is
// announced once to all ranks), fuse small allreduces into one, and run them in the same
// order on every rank. A thread waiting on a handle drives the cycles itself when no other
// thread is, so a lone synchronous call pays for no thread hand-off.
//
// Requests with a name may be submitted in any order on different ranks. Requests without
// a name (the synchronous API) are matched by the order of submission on each rank.
// Thread-safe: every public function may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/backends/collective_backend.h"
#include "runtime/engine/control_message.h"
#include "runtime/engine/message_table.h"
#include "runtime/engine/request.h"
#include "runtime/engine/response_cache.h"
#include "runtime/timeline/shared_timeline.h"
#include "runtime/timeline/timeline_writer.h"

namespace hvd::engine {

struct EngineOptions {
  std::chrono::microseconds cycleTime{1000};         // HOROVOD_CYCLE_TIME (ms)
  size_t cacheCapacity = 1024;                       // HOROVOD_CACHE_CAPACITY; 0 disables
  std::uint64_t fusionThresholdBytes = 128ull << 20;  // HOROVOD_FUSION_THRESHOLD; 0 disables
  bool stallCheck = true;                            // !HOROVOD_STALL_CHECK_DISABLE
  std::chrono::milliseconds stallWarning{60000};     // HOROVOD_STALL_CHECK_TIME_SECONDS
  std::chrono::milliseconds stallShutdown{0};        // HOROVOD_STALL_SHUTDOWN_TIME_SECONDS; 0: never
  // HOROVOD_TIMELINE: this rank's Chrome trace (empty: none), its size cap, and cycle marks.
  std::string timelinePath;
  std::uint64_t timelineMaxBytes = 64ull << 20;
  bool timelineMarkCycles = false;
  // This rank reads the same clock as rank 0 (same host): no offset is applied.
  bool sameClockAsRank0 = true;
  // Called on the engine's thread after a stall shutdown stopped the engine, with the
  // failure every pending request got (naming the tensor and the ranks). The runtime ends
  // the rank there (runtime/core/runtime.cc); unset (ranks that are threads of one test
  // process), the requests fail and the process goes on.
  std::function<void(const Status& stalled)> onStallShutdown;
  // Called once, before this rank's caller first sees a failure that another rank's going
  // caused (its connection closed, or it shut hvd down): with that rank. The runtime tells
  // hvdrun, which then names that rank as the job's cause, not this one.
  std::function<void(int rank)> onPeerGone;
  // Put before the engine's own log lines (its stall warnings), with ": ": a process set's
  // engine says which set, and which job ranks its rank numbers are. Empty: the job's.
  std::string logContext;
  // A process set's engine: the job engine's timeline (its sharedTimeline()), which it
  // writes into while the job's is open, its tracks numbered from timelineTrackBase and
  // named with timelineTrackPrefix, and the ranks its arrival marks name as the job's
  // (timelineRanks[set rank]). Null: the engine's timeline is its own (the job's engine).
  std::shared_ptr<timeline::SharedTimeline> followTimeline;
  int timelineTrackBase = 0;
  std::string timelineTrackPrefix;
  std::vector<int> timelineRanks;
};


using HandleId = std::int64_t;

// An allgather's result: every rank's share back to back in rank order, in host memory
// for host tensors; a GPU tensor's stays on its device, in memory the backend allocated
// (bytes then empty).
struct Gathered {
  std::vector<std::byte> bytes;
  std::vector<std::uint64_t> counts;  // elements per rank
  Device device = Device::kCpu;       // where the result is
  backends::DeviceBuffer onDevice;    // the result when device is not the CPU
};

class Engine {
 public:
  // Takes the backends in order of preference; the first that supports a request's device
  // runs it; the first that supports the CPU carries the control path. Starts the thread.
  static Result<std::unique_ptr<Engine>> start(int rank, int size,
                                               std::vector<std::unique_ptr<backends::CollectiveBackend>> backends,
                                               EngineOptions options);
  ~Engine();  // shutdown()

  struct Submission {
    std::string name{};  // empty: matched by order of submission
    Spec spec;
    const void* in = nullptr;  // allreduce, allgather: read until completion
    void* out = nullptr;       // allreduce: may equal in; broadcast: in place; allgather:
                               // optional, on the tensor's device (else the result is
                               // memory on that device handed over by waitGathered)
    std::uint64_t outBytes = 0;  // allgather with out, reducescatter: its size, checked when it runs
    // The submitting thread waits for it at once (a blocking call) and so drives its cycle
    // itself: an engine thread that is backing off is not woken for it.
    bool waitedAtOnce = false;
    // alltoall: rows to each rank, in rank order (empty: rows / size to each, which must
    // divide evenly). Checked against count at submission.
    std::vector<std::uint64_t> splits{};
  };
  // Does not block on other ranks. Errors: kInvalidUsage for a name already pending on
  // this rank, or after the engine stopped (with the reason it stopped). The caller's
  // buffers must stay valid until the handle completes.
  Result<HandleId> submit(Submission submission);
  // Whether the request finished (successfully or not); kInvalidArgument for an unknown
  // handle. Never blocks.
  Result<bool> poll(HandleId handle);
  // Blocks until the request finished and releases the handle. The request's error names
  // the tensor and the ranks or peer involved.
  Status wait(HandleId handle);
  // wait() for an allgather or an alltoall, handing over its result (an alltoall's counts:
  // the elements each rank sent this one).
  Result<Gathered> waitGathered(HandleId handle);
  // Waits at most `timeout` for the request: true once it finished (wait() then returns at
  // once), false while it is pending. Lets a caller look up between waits (Python checks
  // for Ctrl-C); kInvalidArgument for an unknown handle.
  Result<bool> waitFor(HandleId handle, std::chrono::milliseconds timeout);

  // Horovod's join(): this rank has no more data. Its handle completes once every rank
  // joined; until then this rank takes part in the reductions the others still run with
  // what changes none of their results (each reduction's identity in an allreduce or a
  // reducescatter). As in Horovod, an allgather, a broadcast or an alltoall while any rank
  // has joined fails on the ranks still working, as does a GPU tensor (this engine has no
  // GPU stand-in); the joined ranks stay in join. Requests submitted before it run first;
  // requests submitted on this rank while it is pending are refused (kInvalidUsage), as is
  // a second join.
  Result<HandleId> submitJoin();
  // Waits for a join and releases its handle: the last rank to join (the highest of those
  // that joined in the same cycle).
  Result<int> waitJoin(HandleId handle);

  // True once the engine stopped: a peer shut down or failed, or shutdown() ran. Every
  // later request fails at once; hvd::init() then rejoins the job with a new runtime.
  bool stopped() const;

  // Asks every rank's engine to stop after the current cycle (the first rank to ask ends
  // the job's collectives: the others' pending requests fail saying so), then stops this
  // one's thread. Requests still pending here fail. Blocks at most the backends' timeout;
  // idempotent.
  void shutdown();

  // Horovod's start_timeline / stop_timeline: this rank's trace from the next cycle on, to
  // `path` (the rank's own file: timeline/trace_files.h), with or without cycle marks.
  // Starting the one already being written is a no-op; another is kInvalidUsage until
  // stopTimeline(), which writes and closes the file (a no-op without one). Both wait for the
  // cycle in flight.
  Status startTimeline(const std::string& path, bool markCycles);
  void stopTimeline();
  // Where this (the job's) engine publishes its timeline for its process sets' engines
  // (EngineOptions::followTimeline).
  std::shared_ptr<timeline::SharedTimeline> sharedTimeline() const { return sharedTimeline_; }

  std::string_view cpuBackendName() const { return backends_.front()->name(); }
  // GPU calls submitted later run on this CUDA stream (nullptr: the backend's own).
  // Waits for the current cycle, so no call is mid-flight when the stream changes.
  Status setGpuStream(void* stream);
  // GPU work queued from now on waits, on the GPU, for what `stream` holds now (the
  // framework's kernels that wrote the tensors about to be submitted); the calling thread
  // does not wait, nor for the current cycle. False where the GPU backend cannot (none
  // here, or no GPU of its own open yet): the caller waits for its stream itself.
  Result<bool> waitForGpuStream(void* stream);
  // The backend that runs tensors on `device`; "none" when there is none.
  std::string_view backendName(Device device) const;

 private:
  struct Operation;
  Engine(int rank, int size, std::vector<std::unique_ptr<backends::CollectiveBackend>> backends, EngineOptions options);
  void threadMain();
  // Has the thread run the next cycle at once.
  void kick();
  std::shared_ptr<Operation> find(HandleId handle);
  // Registers a request or join (under queueMutex_), refusing it when the engine stopped, a
  // join is pending here, or its name is; wakes the thread unless the caller drives it.
  Result<HandleId> enqueue(std::shared_ptr<Operation> op, bool waitedAtOnce);
  // Waits for op, driving cycles when no other thread is; with `timeout`, only that long
  // (counted from the end of the first cycle, so a call done in it reads no clock). True
  // when op completed.
  bool waitFor(const std::shared_ptr<Operation>& op,
               std::optional<std::chrono::steady_clock::duration> timeout = std::nullopt);
  void release(HandleId handle);

  // One cycle, with cycleMutex_ held; true when it ran or decided anything here.
  // `wait`: how the control agreement waits for peers (kAsData when a blocked caller drives).
  using ControlWait = backends::CollectiveBackend::ControlWait;
  bool runCycle(ControlWait wait);
  Status negotiateAndRun(ControlWait wait);
  void takeIncoming(bool& shutdownAsked);
  Status exchangeAnnouncements(std::vector<std::shared_ptr<Operation>>& announcing, bool joining,
                               std::vector<Response>& decided);
  Status runStallCheck();
  // A cycle's requests to run, in order, each with what was agreed for it.
  using ReadyList = std::vector<std::pair<Response, std::shared_ptr<Operation>>>;
  // The unnamed requests this cycle runs (a rider already ran; a disagreeing head fails).
  Status takeUnnamed(const ControlAgreement& agreed, bool riding, double agreeStartUs, ReadyList& ready);
  // Fails the first unnamed request, which ranks submitted differently, with each rank's spec.
  // With `joinedHere`, this rank has no request of its own and sends no spec.
  Status failDisagreeingHead(bool joinedHere);
  // A joined rank learns the specs of the unnamed requests the others run this cycle.
  Status shareUnnamedSpecs(size_t take, bool joinedHere, std::vector<Spec>& specs);
  // What a joined rank runs in the place of the request it never made (reduction_identity.h).
  std::shared_ptr<Operation> standIn(const Response& response);
  // While ranks have joined: a request every rank must fail (a broadcast from a joined
  // root, a GPU tensor), or ok.
  Status refusedWhileJoined(const Spec& spec) const;
  Status adasumRefusal(const Spec& spec);
  // Records the ranks that joined this cycle (in rank order); the names that waited only
  // for them are decided into `decided`.
  void recordJoins(const std::vector<int>& ranks, std::vector<Response>& decided);
  Status execute(ReadyList& ready);
  Status runAllreduceGroup(const ReadyList& ready,
                           const std::vector<size_t>& members);
  Status runReducescatterGroup(const ReadyList& ready, const std::vector<size_t>& members);
  Status hostReducescatter(backends::CollectiveBackend& backend, const std::vector<Operation*>& ops, size_t& total,
                           double& t1, double& t2);
  void spanFusedGroup(const ReadyList& ready, const std::vector<size_t>& members, const Spec& whole,
                      const backends::CollectiveBackend* backend, double t0, double t1, double t2);
  Status runAlone(const Response& response, Operation& op);
  Status runReducescatter(backends::CollectiveBackend& backend, Operation& op);
  Status runAlltoall(backends::CollectiveBackend& backend, Operation& op);
  backends::CollectiveBackend* backendFor(Device device);
  void complete(const std::shared_ptr<Operation>& op, Status status);
  void stop(const Status& why, std::optional<int> goneRank = std::nullopt);
  void tellPeerGone();  // fails everything pending; the engine then refuses work
  // Timeline (no-ops without one): the track of a tensor, and its spans.
  int trackFor(const Operation& op);
  int fusionTrack();
  void span(const Operation& op, const char* name, double fromUs, double toUs, bool withArgs = false);
  void tick(const Operation& op, int rank, double atUs);
  Status measureClockOffset(double& offsetUs);
  // A process set's engine: takes up or lets go of the job's timeline when the job's engine
  // opened or closed one since this engine's last cycle (cycleMutex_ held).
  void followJobTimeline();
  // The tracks of a timeline just closed or left: forgotten, pending requests' included.
  void forgetTracks();
  // Opens timeline_ for `path` (cycleMutex_ held, or before the thread starts).
  Status openTimeline(const std::string& path);

  int rank_, size_;
  EngineOptions options_;
  std::vector<std::unique_ptr<backends::CollectiveBackend>> backends_;

  // Shared with submitting threads (queueMutex_).
  mutable std::mutex queueMutex_;
  std::vector<std::shared_ptr<Operation>> incoming_;
  std::unordered_map<HandleId, std::shared_ptr<Operation>> handles_;
  std::set<std::string> activeNames_;  // named requests submitted and not yet finished
  HandleId nextHandle_ = 1;
  bool shutdownAsked_ = false;
  bool joinSubmitted_ = false;  // a join is pending here: submissions are refused
  bool kick_ = false;               // run the next cycle now (a waiter could not drive it, or stopped)
  std::atomic<bool> idle_{false};   // the thread is backing off: a submission wakes it
  std::atomic<bool> opsPending_{false};  // after the last cycle, requests were still pending
  // When the last cycle started (steady clock, ns), whoever ran it: the thread skips its
  // turn while waiting callers drive cycles, instead of contending with them.
  std::atomic<std::int64_t> lastCycleStart_{0};
  std::chrono::steady_clock::time_point cycleStart_{};  // the running cycle's start (guarded by cycleMutex_, as the cycle is)
  Status stopped_;  // non-ok once the engine stopped
  std::optional<int> goneRank_;  // with stopped_: the rank whose going stopped the engine
  std::once_flag goneTold_;      // onPeerGone: a second caller waits until the first told
  std::condition_variable wake_;  // the thread's sleep between cycles

  // Completion (doneMutex_): waiters sleep here between their own cycles.
  std::mutex doneMutex_;
  std::condition_variable done_;

  // The cycle's state (cycleMutex_): held by whichever thread runs a cycle.
  std::mutex cycleMutex_;
  std::atomic<bool> running_{true};
  std::map<std::string, std::shared_ptr<Operation>> named_;
  std::deque<std::shared_ptr<Operation>> unnamed_;
  std::uint64_t unnamedRun_ = 0;  // unnamed requests run so far (the same count on every rank)
  // The last unnamed request that ran (the same on every rank): the next one rides in the
  // control exchange, speculatively, when it is an allreduce of this shape (blocking
  // calls in a loop), so it costs one collective instead of two.
  std::optional<Spec> lastUnnamed_;
  std::vector<std::byte> rider_;
  std::shared_ptr<timeline::TimelineWriter> timeline_;  // shared with process sets' engines
  std::string timelinePath_;  // timeline_'s file
  // Where the job's engine publishes timeline_ for its process sets (followTimeline there).
  std::shared_ptr<timeline::SharedTimeline> sharedTimeline_ = std::make_shared<timeline::SharedTimeline>();
  std::uint64_t followedGeneration_ = 0;  // a set's engine: the job timeline it follows
  double clockOffsetUs_ = 0;  // rank 0's clock minus this rank's, measured at start
  std::unordered_map<std::string, int> tracks_;  // tensor name -> timeline track
  // The cycle's timeline events, handed to the writer at once when the cycle ends.
  std::vector<timeline::Event> events_;
  bool timelineUnwritten_ = false;  // events handed over since the writer was last asked to write
  std::chrono::steady_clock::time_point lastProgress_{};  // the last cycle that ran or decided something
  // Ranks seen ready for names not yet submitted here (rank, when), ticked on arrival.
  std::unordered_map<std::string, std::vector<std::pair<int, double>>> earlyTicks_;
  MessageTable table_;
  ResponseCache cache_;
  std::uint64_t tick_ = 0;
  bool progressed_ = false;  // the current cycle ran or decided something
  std::vector<std::byte> fusionBuffer_;
  std::chrono::steady_clock::time_point nextStallCheck_;
  std::set<std::string> warnedStalls_;
  // join(): this rank's pending join (announced once nothing else is pending here), and
  // which ranks have joined (the same on every rank: learnt from the announcements).
  std::shared_ptr<Operation> join_;
  bool joinAnnounced_ = false;
  std::vector<bool> joined_;
  int joinedCount_ = 0;
  int lastJoined_ = -1;
  // This rank joined: its thread runs cycles back to back (each waits in the control
  // exchange for the others), so the ranks still working are not paced by its cycle time.
  std::atomic<bool> joinedHere_{false};

  std::thread thread_;
};

}  // namespace hvd::engine
