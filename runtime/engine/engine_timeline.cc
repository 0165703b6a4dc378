// runtime/engine/engine_timeline.cc: the engine's Chrome trace: the writer it opens or
// follows, a track per tensor, and the events of each request's negotiation and run, with
// Horovod's names for them.
#include "runtime/engine/engine_parts.h"

namespace hvd::engine {

using backends::TensorRef;

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

}  // namespace hvd::engine
